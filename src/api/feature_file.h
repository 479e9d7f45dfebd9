#pragma once

#include <string>

#include "api/sam2_model.h"
#include "model/image_encoder.h"

namespace sam2rt {

struct FeatureFileOptions {
  bool decoder_ready = false;  // image_embed, feat_s1, feat_s0
  bool position_encodings = false;  // neck.pos0..2
  Precision precision = Precision::fp32;  // how the encoder ran, recorded in the metadata
};

// Writes the encoder outputs under the goldens' names (neck.level0..2, ...) with
// metadata recording the architecture, the encoder's precision and the original
// image size, so that `sam2rt segment --features` can reuse the file.
void write_feature_file(const std::string& path, const EncoderOutputs& outputs, const ModelConfig& config,
                        const std::string& weights_description, int orig_width, int orig_height,
                        const FeatureFileOptions& options);

struct FeatureFile {
  DecoderFeatures features;
  int orig_width = 0;
  int orig_height = 0;
  int image_size = 0;
  std::string variant;
};

// Reads a file written with decoder_ready; Error when keys or metadata are missing.
FeatureFile read_feature_file(const std::string& path);

}  // namespace sam2rt
