#pragma once

#include <memory>
#include <string>

#include "api/feature_file.h"
#include "api/model_identity.h"
#include "api/sam2_model.h"
#include "core/tensor.h"
#include "io/image.h"
#include "model/image_encoder.h"

namespace sam2rt {

// A photo ready for the image encoder: its preprocessed pixels and original size.
struct PreparedImage {
  Tensor pixels;  // [1, 3, S, S]
  int orig_width = 0;
  int orig_height = 0;
};

// The encoder's outputs for one photo and its original size.
struct EncodedImage {
  EncoderOutputs outputs;
  int orig_width = 0;
  int orig_height = 0;
};

// What `sam2rt encode` does to a photo, split into the three steps a batch runs
// on different threads so that reading and writing hide behind the encoder:
// prepare (preprocessing), encode, write (the features file). Every caller (the
// CLI's single image and batch modes, the Python batch worker) goes through here,
// so that they all write the same bytes. All three steps are thread-safe.
class FeatureEncoder {
 public:
  // weights_description: how the CLI names the weights (ModelSource::describe of the resolved config).
  FeatureEncoder(std::shared_ptr<const Sam2Model> model, std::string weights_description, FeatureFileOptions options);

  PreparedImage prepare(const RgbImage& image) const;
  EncodedImage encode(const PreparedImage& image) const;
  // Atomically: a temporary file beside `path`, renamed over it when complete.
  void write(const std::string& path, const EncodedImage& image) const;

  const FeatureFileOptions& options() const { return options_; }

 private:
  std::shared_ptr<const Sam2Model> model_;
  ModelIdentity identity_;  // computed once: it samples every weight tensor
  std::string weights_description_;
  FeatureFileOptions options_;
};

}  // namespace sam2rt
