#include "compute_threads.h"

#include <omp.h>
#include <pybind11/pybind11.h>

#include <atomic>

#include "bindings.h"

namespace sam2rt::python {

namespace {

std::atomic<int> chosen_threads{0};
int default_threads() {
  static const int threads = omp_get_max_threads();  // before anyone changed it: OMP_NUM_THREADS or all cores
  return threads;
}

}  // namespace

void set_compute_threads(int threads) {
  if (threads < 0) throw pybind11::value_error("number of threads must be >= 0 (0 = all cores), got " +
                                               std::to_string(threads));
  chosen_threads = threads;
}

int compute_threads() {
  const int chosen = chosen_threads;
  return chosen > 0 ? chosen : default_threads();
}

void apply_compute_threads() { omp_set_num_threads(compute_threads()); }

void bind_compute_threads(pybind11::module_& module) {
  default_threads();
  module.def("set_num_threads", &set_compute_threads, pybind11::arg("threads"),
             "Threads each encode/decode call uses (0 = all cores); applies to calls from every Python thread.");
  module.def("get_num_threads", &compute_threads, "Threads each encode/decode call uses.");
}

}  // namespace sam2rt::python
