#pragma once

#include <cstdlib>
#include <string>

namespace sam2rt::testing {

// ../shared relative to the repository root, as in CI; SAM2RT_SHARED_DIR
// overrides it for a test binary run away from its checkout
// (scripts/device-bench.sh on a GPU machine).
inline std::string shared_dir() {
  const char* moved = std::getenv("SAM2RT_SHARED_DIR");
  return moved != nullptr && *moved != '\0' ? std::string(moved) : std::string(SAM2RT_SOURCE_DIR) + "/../shared";
}
inline std::string fixtures_dir() { return shared_dir() + "/fixtures"; }
inline std::string cli_path() { return SAM2RT_CLI_PATH; }

}  // namespace sam2rt::testing
