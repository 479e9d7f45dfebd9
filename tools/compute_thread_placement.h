#pragma once

namespace sam2rt::cli {

// Binds OpenMP thread i of the calling thread's teams to the i-th CPU this
// process may run on, when the team has exactly one thread per such CPU (and
// more than one) and the user chose no OpenMP placement (OMP_PROC_BIND,
// OMP_PLACES or GOMP_CPU_AFFINITY). Otherwise it changes nothing. Returns
// whether the threads are pinned so (bench reports it).
//
// Why: beside one other busy thread, the kernel often leaves both of our
// threads on one CPU and the other program alone on the second (two against
// one counts as balanced), so a 2-thread encode got one core, not the fair
// four thirds of one. Pinned, each of our threads keeps a CPU of its own and
// shares it at worst with the other program (Tiny, 2 threads, Zen 5, beside
// `yes`, bench/fairness.sh: fp32 1.62x -> 1.45x, bf16 1.78x -> 1.51x of the
// quiet time, which did not change).
// Only the CLI's one-image commands use it: a library must not pin its
// caller's thread, and the server's request threads each lead a team.
bool place_compute_threads(int threads);

// Lets the calling thread run on every CPU the process could use before
// place_compute_threads: for a helper thread started by the pinned main thread
// (it inherits the main thread's single CPU otherwise).
void let_thread_run_anywhere();

}  // namespace sam2rt::cli
