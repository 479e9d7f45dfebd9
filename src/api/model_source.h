#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/weights.h"
#include "model/config.h"

namespace sam2rt {

// Where a model's architecture and weights come from, as the CLI's
// --model / --synthetic-weights / --variant / --config flags describe it.
struct ModelSource {
  std::string checkpoint_path;           // .pt or .safetensors; empty with synthetic_salt
  std::optional<uint64_t> synthetic_salt; // fixture-weight generator instead of a file
  // Preset, used when config_path is empty. Empty: detected from the checkpoint's
  // tensor shapes (tiny for synthetic weights).
  std::string variant = "tiny";
  std::string config_path;                // official-format YAML

  // Reads the checkpoint when the variant is to be detected from it.
  ModelConfig resolve_config() const;
  // The config for these weights (the checkpoint's): an explicit variant or config,
  // refused (naming both) when it conflicts with the preset the shapes show, or
  // else the detected preset, with a line for the user in `detection`.
  ModelConfig resolve_config(const WeightMap& weights, std::string* detection) const;
  bool detects_variant() const { return variant.empty() && config_path.empty() && !synthetic_salt; }
  std::string describe() const;  // e.g. "tiny, sam2.1_hiera_tiny.pt"
  // The same naming the architecture that was resolved (detected) for this source.
  std::string describe(const ModelConfig& resolved) const;
};

}  // namespace sam2rt
