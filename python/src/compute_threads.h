#pragma once

namespace sam2rt::python {

// OpenMP keeps its thread count per calling thread, and every Python thread is a
// new one to OpenMP: the count chosen from Python is kept here and applied by
// each binding in the thread that calls it, before any parallel work.
void set_compute_threads(int threads);  // 0 = OpenMP's default (all cores)
int compute_threads();                  // what apply_compute_threads() sets
void apply_compute_threads();

}  // namespace sam2rt::python
