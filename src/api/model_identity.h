#pragma once

#include <string>

#include "core/weights.h"
#include "model/config.h"

namespace sam2rt {

// What turns a photo into decoder features: enough to tell whether a model can
// decode features that were saved earlier. Recorded in every features file.
struct ModelIdentity {
  std::string variant;              // config name (preset name or YAML path), for messages
  std::string config_hash;          // hash of every config value except the name
  std::string weights_fingerprint;  // see weights_fingerprint()
  std::string preprocessing;        // how the photo became the encoder's input
  int image_size = 0;
};

ModelIdentity identify_model(const ModelConfig& config, const WeightMap& weights);

// 16 hex digits of a 64-bit FNV-1a hash over every value of `config` but its name,
// so that a YAML equal to a preset gives the preset's hash.
std::string config_hash(const ModelConfig& config);

// 16 hex digits of a 64-bit FNV-1a hash over the image-path weights `config`
// needs: each key, its shape and 16 evenly spaced values (all of a smaller tensor).
// Names and shapes pin the architecture; two trainings or a fine-tune differ in
// nearly every value, so a sample of every tensor tells them apart while reading
// a few kilobytes instead of the whole checkpoint. It hashes the tensors rather
// than the checkpoint file so that the same weights as .pt, as .safetensors or
// as generated weights agree.
std::string weights_fingerprint(const WeightMap& weights, const ModelConfig& config);

// The preprocessing of preprocess_image(), as recorded in features files.
extern const char* const kPreprocessing;

// Throws Error naming both sides for the first field in which `features` (what
// made saved features, described by `origin`) differs from `model`.
void require_same_model(const ModelIdentity& features, const ModelIdentity& model, const std::string& origin);

}  // namespace sam2rt
