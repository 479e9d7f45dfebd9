#pragma once

#include <optional>
#include <string>

#include "api/model_identity.h"
#include "api/sam2_model.h"
#include "backends/device_precision.h"
#include "io/safetensors_narrow.h"
#include "model/image_encoder.h"

namespace sam2rt {

struct FeatureFileOptions {
  bool all_features = false;  // the neck's levels neck.level0..2 besides the decoder-ready set
  bool position_encodings = false;  // neck.pos0..2
  Precision precision = Precision::fp32;  // how the encoder ran, recorded in the metadata
  // fp16: the encoder stored its tensors in fp16 on a device (recorded as precision "fp16").
  DevicePrecision device_precision = DevicePrecision::fp32;
  // How the tensors are stored (recorded as feature_dtype); reading widens them
  // back to float32. f32 keeps them exact.
  StoredDtype dtype = StoredDtype::f32;
};

// "float32", "bfloat16", "float16", as --feature-dtype names them.
const char* feature_dtype_name(StoredDtype dtype);
StoredDtype parse_feature_dtype(const std::string& name);

// Writes the decoder-ready features (image_embed, feat_s1, feat_s0) and on
// request the neck's outputs, under the goldens' names (neck.level0..2, ...) with
// metadata recording what made them (the model's identity, the encoder's
// precision) and the original image size, so that `sam2rt segment --features`
// can reuse the file and refuse it for another model.
void write_feature_file(const std::string& path, const EncoderOutputs& outputs, const ModelIdentity& made_by,
                        const std::string& weights_description, int orig_width, int orig_height,
                        const FeatureFileOptions& options);

struct FeatureFile {
  std::string path;
  DecoderFeatures features;
  int orig_width = 0;
  int orig_height = 0;
  std::optional<ModelIdentity> made_by;  // absent in files of sam2rt versions before the record
  std::string precision;                 // empty in those files too
  std::string dtype;                     // how the file stores them (float32 in those files)
};

// Reads the decoder-ready set (as float32); Error when keys or metadata are missing.
FeatureFile read_feature_file(const std::string& path);

// Error unless `file` was made by the model `model` identifies (naming both
// sides), or has no record of its model; `force` skips both checks.
void require_features_of(const FeatureFile& file, const ModelIdentity& model, bool force);

}  // namespace sam2rt
