#pragma once

#include <map>
#include <optional>
#include <string>

#include "core/tensor.h"
#include "core/weights.h"
#include "model/config.h"

namespace sam2rt {

// Checkpoint key -> tensor shape: all that detection looks at.
using ShapeMap = std::map<std::string, Shape>;
ShapeMap shapes_of(const WeightMap& weights);

// Which official checkpoint a state dict is, told from its keys and shapes.
struct DetectedVariant {
  std::string variant;  // preset name: tiny, small, base_plus or large
  // "SAM 2.1" (it has no_obj_embed_spatial), "SAM 2.0" (memory modules but not
  // that key), or "SAM 2" when only the image path is present (2.0 and 2.1 share
  // its architecture, so the preset fits either).
  std::string release;
  std::string describe() const { return release + " hiera " + variant; }
};

// The one preset whose image-path weights `shapes` hold exactly; nullopt for
// none (a custom architecture, or not a SAM 2 checkpoint).
std::optional<DetectedVariant> detect_variant(const ShapeMap& shapes);

// Empty when `shapes` hold every image-path weight of `config` with its shape
// and no trunk block beyond the config's; otherwise the first difference, as text.
std::string shape_mismatch(const ShapeMap& shapes, const ModelConfig& config);

}  // namespace sam2rt
