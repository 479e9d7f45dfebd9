#pragma once

namespace sam2rt::cli {

// The process environment the engine runs best in, read by libgomp before main
// (so set by starting this program again in place, once, for the commands that
// run the engine): GOMP_SPINCOUNT, how long an idle OpenMP thread spins before
// it sleeps, chosen for a shared machine, unless the user chose
// (OMP_WAIT_POLICY or GOMP_SPINCOUNT). Huge pages are not asked for, here or
// elsewhere (core/tensor.cpp says why).
// Returns when nothing was to be done or the restart failed (then the
// libraries' defaults stay).
void restart_with_engine_environment(int argc, char** argv);

}  // namespace sam2rt::cli
