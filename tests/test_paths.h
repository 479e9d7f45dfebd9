#pragma once

#include <string>

namespace sam2rt::testing {

// ../shared relative to the repository root, as in CI.
inline std::string shared_dir() { return std::string(SAM2RT_SOURCE_DIR) + "/../shared"; }
inline std::string fixtures_dir() { return shared_dir() + "/fixtures"; }
inline std::string cli_path() { return SAM2RT_CLI_PATH; }

}  // namespace sam2rt::testing
