#pragma once

namespace sam2rt::cli {

// How long an idle OpenMP thread spins before it sleeps, chosen for a shared
// machine unless the user chose (OMP_WAIT_POLICY or GOMP_SPINCOUNT): if neither
// is set and the command runs the engine, sets GOMP_SPINCOUNT and starts this
// program again in place (libgomp reads its environment once, before main).
// Returns when nothing was to be done or the restart failed (then libgomp's
// default stays).
void restart_with_shared_machine_spin(int argc, char** argv);

}  // namespace sam2rt::cli
