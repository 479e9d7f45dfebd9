#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "model/config.h"

namespace sam2rt {

// Where a model's architecture and weights come from, as the CLI's
// --model / --synthetic-weights / --variant / --config flags describe it.
struct ModelSource {
  std::string checkpoint_path;           // .pt or .safetensors; empty with synthetic_salt
  std::optional<uint64_t> synthetic_salt; // fixture-weight generator instead of a file
  std::string variant = "tiny";           // preset, used when config_path is empty
  std::string config_path;                // official-format YAML

  ModelConfig resolve_config() const;
  std::string describe() const;  // e.g. "tiny, sam2.1_hiera_tiny.pt"
};

}  // namespace sam2rt
