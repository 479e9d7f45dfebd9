#include "api/feature_file.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "core/error.h"

namespace sam2rt {

namespace {

// v1 files (before the model record) are still read, and refused unless forced.
constexpr const char* kFormat = "sam2rt.features.v2";
constexpr const char* kFormatWithoutRecord = "sam2rt.features.v1";

int metadata_int(const SafetensorsFile& file, const std::string& key, const std::string& path) {
  auto it = file.metadata.find(key);
  int value = 0;
  if (it == file.metadata.end() ||
      std::from_chars(it->second.data(), it->second.data() + it->second.size(), value).ec != std::errc() ||
      value <= 0) {
    throw Error("features '" + path + "': metadata '" + key +
                "' is missing or not a positive integer; write the file with `sam2rt encode`");
  }
  return value;
}

std::string metadata_text(const SafetensorsFile& file, const std::string& key, const std::string& path) {
  auto it = file.metadata.find(key);
  if (it == file.metadata.end() || it->second.empty()) {
    throw Error("features '" + path + "': metadata '" + key + "' is missing; write the file with `sam2rt encode`");
  }
  return it->second;
}

constexpr float kFloat16Max = 65504.0f;

// Narrowing to float16 turns larger values into Inf: refuse rather than write them.
void require_float16_range(const NamedTensors& tensors) {
  for (const auto& [name, tensor] : tensors) {
    const auto beyond = std::find_if(tensor.begin(), tensor.end(), [](float v) { return std::fabs(v) > kFloat16Max; });
    if (beyond != tensor.end()) {
      throw Error("feature '" + name + "' holds " + std::to_string(*beyond) +
                  ", beyond float16's range (65504); use --feature-dtype bfloat16 or float32");
    }
  }
}

}  // namespace

const char* feature_dtype_name(StoredDtype dtype) {
  return dtype == StoredDtype::f32 ? "float32" : dtype == StoredDtype::bf16 ? "bfloat16" : "float16";
}

StoredDtype parse_feature_dtype(const std::string& name) {
  for (StoredDtype dtype : {StoredDtype::f32, StoredDtype::bf16, StoredDtype::f16}) {
    if (name == feature_dtype_name(dtype)) return dtype;
  }
  throw Error("unknown feature dtype '" + name + "': use float32, bfloat16 or float16");
}

void write_feature_file(const std::string& path, const EncoderOutputs& outputs, const ModelIdentity& made_by,
                        const std::string& weights_description, int orig_width, int orig_height,
                        const FeatureFileOptions& options) {
  NamedTensors tensors;
  if (options.all_features) {
    for (size_t i = 0; i < outputs.neck_levels.size(); ++i) {
      tensors.emplace_back("neck.level" + std::to_string(i), outputs.neck_levels[i]);
    }
  }
  if (options.position_encodings) {
    if (outputs.neck_pos.size() != outputs.neck_levels.size()) {
      throw Error("internal: position encodings were requested but not computed");
    }
    for (size_t i = 0; i < outputs.neck_pos.size(); ++i) {
      tensors.emplace_back("neck.pos" + std::to_string(i), outputs.neck_pos[i]);
    }
  }
  tensors.emplace_back("image_embed", outputs.decoder.image_embed);
  tensors.emplace_back("feat_s1", outputs.decoder.feat_s1);
  tensors.emplace_back("feat_s0", outputs.decoder.feat_s0);
  if (options.dtype == StoredDtype::f16) require_float16_range(tensors);
  const std::map<std::string, std::string> metadata = {
      {"format", kFormat},
      {"variant", made_by.variant},
      {"config_hash", made_by.config_hash},
      {"weights", weights_description},
      {"weights_fingerprint", made_by.weights_fingerprint},
      {"preprocessing", made_by.preprocessing},
      {"precision", options.device_precision == DevicePrecision::fp16 ? "fp16" : precision_name(options.precision)},
      {"feature_dtype", feature_dtype_name(options.dtype)},
      {"image_size", std::to_string(made_by.image_size)},
      {"orig_width", std::to_string(orig_width)},
      {"orig_height", std::to_string(orig_height)},
  };
  write_safetensors_as(path, tensors, metadata, options.dtype);
}

FeatureFile read_feature_file(const std::string& path) {
  SafetensorsFile file = read_safetensors(path);
  auto format = file.metadata.find("format");
  if (format == file.metadata.end() || (format->second != kFormat && format->second != kFormatWithoutRecord)) {
    throw Error("features '" + path + "' was not written by `sam2rt encode` (metadata format is not " + kFormat + ")");
  }
  FeatureFile result;
  result.path = path;
  auto take = [&](const char* name) {
    auto it = file.tensors.find(name);
    if (it == file.tensors.end()) {
      throw Error("features '" + path + "' has no tensor '" + name + "'; encode the image again with `sam2rt encode`");
    }
    return it->second;
  };
  result.features.image_embed = take("image_embed");
  result.features.feat_s1 = take("feat_s1");
  result.features.feat_s0 = take("feat_s0");
  result.orig_width = metadata_int(file, "orig_width", path);
  result.orig_height = metadata_int(file, "orig_height", path);
  if (format->second == kFormat) {
    result.made_by = ModelIdentity{.variant = metadata_text(file, "variant", path),
                                   .config_hash = metadata_text(file, "config_hash", path),
                                   .weights_fingerprint = metadata_text(file, "weights_fingerprint", path),
                                   .preprocessing = metadata_text(file, "preprocessing", path),
                                   .image_size = metadata_int(file, "image_size", path)};
    result.precision = metadata_text(file, "precision", path);
  }
  auto dtype = file.metadata.find("feature_dtype");
  result.dtype = dtype == file.metadata.end() ? feature_dtype_name(StoredDtype::f32) : dtype->second;
  return result;
}

void require_features_of(const FeatureFile& file, const ModelIdentity& model, bool force) {
  if (force) return;
  const std::string origin = "features '" + file.path + "'";
  if (!file.made_by) {
    throw Error(origin + " do not record which model made them (written by an older sam2rt); encode the image "
                "again with `sam2rt encode` (or pass --force-features to use them anyway)");
  }
  require_same_model(*file.made_by, model, origin);
}

}  // namespace sam2rt
