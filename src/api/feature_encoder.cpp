#include "api/feature_encoder.h"

#include "model/preprocess.h"

namespace sam2rt {

FeatureEncoder::FeatureEncoder(std::shared_ptr<const Sam2Model> model, std::string weights_description,
                               FeatureFileOptions options)
    : model_(std::move(model)),
      identity_(identify_model(model_->config(), model_->weights())),
      weights_description_(std::move(weights_description)),
      options_(options) {}

PreparedImage FeatureEncoder::prepare(const RgbImage& image) const {
  return {preprocess_image(image, model_->config().image_size), image.width, image.height};
}

EncodedImage FeatureEncoder::encode(const PreparedImage& image) const {
  const EncodeOptions encode_options{.neck_levels = options_.all_features,
                                     .position_encodings = options_.position_encodings,
                                     .precision = options_.precision};
  return {model_->encoder().encode(image.pixels, encode_options), image.orig_width, image.orig_height};
}

void FeatureEncoder::write(const std::string& path, const EncodedImage& image) const {
  write_feature_file(path, image.outputs, identity_, weights_description_, image.orig_width, image.orig_height,
                     options_);
}

}  // namespace sam2rt
