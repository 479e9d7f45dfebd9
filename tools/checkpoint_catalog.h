#pragma once

#include <span>
#include <string_view>

namespace sam2rt::cli {

// Where Meta publishes a SAM 2.1 checkpoint (models/README.md lists the same
// links). The README gives no sizes, so none are recorded here: the server's
// Content-Length and the loader's checks stand in for them.
struct OfficialCheckpoint {
  std::string_view variant;    // tiny, small, base_plus, large
  std::string_view file_name;  // as the demo and the docs expect it under models/
  std::string_view url;
};

std::span<const OfficialCheckpoint> official_checkpoints();

// Throws Error naming the known variants when `variant` is none of them.
const OfficialCheckpoint& official_checkpoint(std::string_view variant);

}  // namespace sam2rt::cli
