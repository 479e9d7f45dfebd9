#include "engine_environment.h"

#include <unistd.h>

#include <cstdlib>
#include <string_view>

namespace sam2rt::cli {

namespace {

// libgomp's default spins up to 300000 pause instructions (milliseconds) at
// every barrier. When another busy thread shares the cores, the spinning thread
// holds a core that its partner, still working, is waiting for. 10000 spins
// (tens of microseconds) still bridge the short serial steps between the
// encoder's parallel loops; a passive wait (no spinning) cost ~7% on a quiet
// machine.
constexpr const char* kSpinCount = "10000";

// The commands that run the engine; the others (download, compare, --help) are
// not worth a second start (tens of milliseconds).
bool runs_the_engine(int argc, char** argv) {
  if (argc < 2) return false;
  const std::string_view command = argv[1];
  return command == "encode" || command == "segment" || command == "everything" || command == "bench" ||
         command == "serve";
}

}  // namespace

void restart_with_engine_environment(int argc, char** argv) {
  if (!runs_the_engine(argc, argv)) return;
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) return;
  if (setenv("GOMP_SPINCOUNT", kSpinCount, 1) == 0) execv("/proc/self/exe", argv);
}

}  // namespace sam2rt::cli
