#include "api/feature_file.h"

#include <charconv>

#include "core/error.h"
#include "io/safetensors.h"

namespace sam2rt {

namespace {

constexpr const char* kFormat = "sam2rt.features.v1";

int metadata_int(const SafetensorsFile& file, const std::string& key, const std::string& path) {
  auto it = file.metadata.find(key);
  int value = 0;
  if (it == file.metadata.end() ||
      std::from_chars(it->second.data(), it->second.data() + it->second.size(), value).ec != std::errc() ||
      value <= 0) {
    throw Error("features '" + path + "': metadata '" + key +
                "' is missing or not a positive integer; write the file with `sam2rt encode --decoder-ready`");
  }
  return value;
}

}  // namespace

void write_feature_file(const std::string& path, const EncoderOutputs& outputs, const ModelConfig& config,
                        const std::string& weights_description, int orig_width, int orig_height,
                        const FeatureFileOptions& options) {
  NamedTensors tensors;
  for (size_t i = 0; i < outputs.neck_levels.size(); ++i) {
    tensors.emplace_back("neck.level" + std::to_string(i), outputs.neck_levels[i]);
  }
  if (options.position_encodings) {
    if (outputs.neck_pos.size() != outputs.neck_levels.size()) {
      throw Error("internal: position encodings were requested but not computed");
    }
    for (size_t i = 0; i < outputs.neck_pos.size(); ++i) {
      tensors.emplace_back("neck.pos" + std::to_string(i), outputs.neck_pos[i]);
    }
  }
  if (options.decoder_ready) {
    tensors.emplace_back("image_embed", outputs.decoder.image_embed);
    tensors.emplace_back("feat_s1", outputs.decoder.feat_s1);
    tensors.emplace_back("feat_s0", outputs.decoder.feat_s0);
  }
  const std::map<std::string, std::string> metadata = {
      {"format", kFormat},
      {"variant", config.name},
      {"weights", weights_description},
      {"precision", precision_name(options.precision)},
      {"image_size", std::to_string(config.image_size)},
      {"orig_width", std::to_string(orig_width)},
      {"orig_height", std::to_string(orig_height)},
  };
  write_safetensors(path, tensors, metadata);
}

FeatureFile read_feature_file(const std::string& path) {
  SafetensorsFile file = read_safetensors(path);
  auto format = file.metadata.find("format");
  if (format == file.metadata.end() || format->second != kFormat) {
    throw Error("features '" + path + "' was not written by `sam2rt encode` (metadata format is not " + kFormat + ")");
  }
  FeatureFile result;
  auto take = [&](const char* name) {
    auto it = file.tensors.find(name);
    if (it == file.tensors.end()) {
      throw Error("features '" + path + "' has no tensor '" + name + "'; encode with --decoder-ready");
    }
    return it->second;
  };
  result.features.image_embed = take("image_embed");
  result.features.feat_s1 = take("feat_s1");
  result.features.feat_s0 = take("feat_s0");
  result.orig_width = metadata_int(file, "orig_width", path);
  result.orig_height = metadata_int(file, "orig_height", path);
  result.image_size = metadata_int(file, "image_size", path);
  result.variant = file.metadata.count("variant") ? file.metadata.at("variant") : "";
  return result;
}

}  // namespace sam2rt
