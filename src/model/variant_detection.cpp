#include "model/variant_detection.h"

#include "model/weight_manifest.h"

namespace sam2rt {

ShapeMap shapes_of(const WeightMap& weights) {
  ShapeMap shapes;
  for (const auto& [key, tensor] : weights.all()) shapes.emplace(key, tensor.shape());
  return shapes;
}

std::string shape_mismatch(const ShapeMap& shapes, const ModelConfig& config) {
  for (const WeightSpec& spec : image_path_weights(config)) {
    auto it = shapes.find(spec.key);
    if (it == shapes.end()) return "no key '" + spec.key + "'";
    if (it->second != spec.shape) {
      return "key '" + spec.key + "' has shape " + shape_to_string(it->second) + ", not " +
             shape_to_string(spec.shape);
    }
  }
  // A deeper trunk holds every block of a shallower one with the same shapes.
  const std::string next_block = "image_encoder.trunk.blocks." + std::to_string(config.num_blocks()) + ".norm1.weight";
  if (shapes.count(next_block)) return "it has more than " + std::to_string(config.num_blocks()) + " trunk blocks";
  return "";
}

std::optional<DetectedVariant> detect_variant(const ShapeMap& shapes) {
  std::optional<DetectedVariant> found;
  for (const std::string& name : preset_names()) {
    if (!shape_mismatch(shapes, preset_config(name)).empty()) continue;
    if (found) return std::nullopt;  // ambiguous: cannot happen for the official presets
    found = DetectedVariant{.variant = name, .release = "SAM 2"};
  }
  if (found) {
    if (shapes.count("no_obj_embed_spatial")) {
      found->release = "SAM 2.1";
    } else if (shapes.count("maskmem_tpos_enc")) {
      found->release = "SAM 2.0";
    }
  }
  return found;
}

}  // namespace sam2rt
