#include "api/model_source.h"

#include <filesystem>

#include "core/error.h"
#include "io/checkpoint.h"
#include "model/variant_detection.h"

namespace sam2rt {

namespace {

std::string file_name(const std::string& path) { return std::filesystem::path(path).filename().string(); }

ModelConfig explicit_config(const ModelSource& source) {
  const std::string preset = source.variant.empty() ? "tiny" : source.variant;
  ModelConfig config = source.config_path.empty() ? preset_config(preset) : load_config_yaml(source.config_path);
  validate_config(config);
  return config;
}

}  // namespace

ModelConfig ModelSource::resolve_config() const {
  if (detects_variant()) return resolve_config(load_checkpoint(checkpoint_path), nullptr);
  return explicit_config(*this);
}

ModelConfig ModelSource::resolve_config(const WeightMap& weights, std::string* detection) const {
  const ShapeMap shapes = shapes_of(weights);
  const std::optional<DetectedVariant> detected = detect_variant(shapes);
  if (!detects_variant()) {
    ModelConfig config = explicit_config(*this);
    const std::string mismatch = shape_mismatch(shapes, config);
    if (detected && !mismatch.empty()) {
      const std::string chosen =
          config_path.empty() ? "--variant " + variant : "--config " + file_name(config_path);
      throw Error(chosen + " conflicts with the checkpoint '" + file_name(checkpoint_path) + "', which holds " +
                  detected->describe() + " (" + mismatch + "); pass --variant " + detected->variant +
                  " or leave --variant/--config out to use the detected one");
    }
    return config;  // a custom architecture: validate_weights names what does not fit
  }
  if (!detected) {
    throw Error("cannot tell which SAM 2 model '" + file_name(checkpoint_path) +
                "' holds: its tensor shapes fit none of tiny, small, base_plus, large (for tiny: " +
                shape_mismatch(shapes, preset_config("tiny")) + "); pass --config FILE.yaml for its architecture");
  }
  if (detection) *detection = "detected " + detected->describe() + " in '" + file_name(checkpoint_path) + "'";
  ModelConfig config = preset_config(detected->variant);
  validate_config(config);
  return config;
}

namespace {

std::string describe_as(const ModelSource& source, const std::string& arch) {
  if (source.synthetic_salt) return arch + ", synthetic weights (salt " + std::to_string(*source.synthetic_salt) + ")";
  return arch + ", " + file_name(source.checkpoint_path);
}

}  // namespace

std::string ModelSource::describe() const {
  if (!config_path.empty()) return describe_as(*this, file_name(config_path));
  if (detects_variant()) return describe_as(*this, "variant from its shapes");
  return describe_as(*this, variant.empty() ? "tiny" : variant);
}

std::string ModelSource::describe(const ModelConfig& resolved) const {
  return describe_as(*this, config_path.empty() ? resolved.name : file_name(config_path));
}

}  // namespace sam2rt
