#include "engine_environment.h"

#include <unistd.h>

#include <cstdlib>
#include <string>
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

// Fresh memory costs a page fault per page on first touch (~11 us per 4 KiB on
// these machines); with huge pages, glibc's large allocations (oneDNN's packed
// weights and scratchpads, images, features) fault 512 times less often. A
// one-shot `everything` took 52455 page faults and 6.36 s without, 6927 and
// 5.72 s with (Tiny, 2 threads, Zen 5).
constexpr const char* kHugePageTunable = "glibc.malloc.hugetlb";

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
  bool changed = false;
  if (std::getenv("OMP_WAIT_POLICY") == nullptr && std::getenv("GOMP_SPINCOUNT") == nullptr) {
    changed |= setenv("GOMP_SPINCOUNT", kSpinCount, 1) == 0;
  }
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables == nullptr || std::string_view(tunables).find(kHugePageTunable) == std::string_view::npos) {
    std::string value = tunables != nullptr && *tunables != '\0' ? std::string(tunables) + ":" : std::string();
    value += std::string(kHugePageTunable) + "=1";
    changed |= setenv("GLIBC_TUNABLES", value.c_str(), 1) == 0;
  }
  if (changed) execv("/proc/self/exe", argv);
}

}  // namespace sam2rt::cli
