#include "compute_thread_placement.h"

#include <omp.h>
#include <sched.h>

#include <cstdlib>
#include <vector>

namespace sam2rt::cli {

namespace {

// The CPUs the process could run on before the pinning.
cpu_set_t& allowed_before_pinning() {
  static cpu_set_t set;
  return set;
}
bool pinned = false;

bool user_chose_placement() {
  return std::getenv("OMP_PROC_BIND") != nullptr || std::getenv("OMP_PLACES") != nullptr ||
         std::getenv("GOMP_CPU_AFFINITY") != nullptr;
}

}  // namespace

bool place_compute_threads(int threads) {
  if (pinned) return true;
  if (user_chose_placement()) return false;
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return false;
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &allowed)) cpus.push_back(cpu);
  }
  const int team = threads > 0 ? threads : omp_get_max_threads();
  if (team < 2 || team != static_cast<int>(cpus.size())) return false;
  allowed_before_pinning() = allowed;
  int refused = 0;
#pragma omp parallel num_threads(team) reduction(+ : refused)
  {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpus[static_cast<size_t>(omp_get_thread_num())], &one);
    // A refusal (a sandbox without the call) leaves that thread where it was:
    // placement is only about speed.
    refused += sched_setaffinity(0, sizeof(one), &one) != 0;
  }
  pinned = refused == 0;
  return pinned;
}

void let_thread_run_anywhere() {
  if (!pinned) return;
  sched_setaffinity(0, sizeof(cpu_set_t), &allowed_before_pinning());
}

}  // namespace sam2rt::cli
