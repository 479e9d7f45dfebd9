#include "api/predictor.h"

#include <algorithm>
#include <cmath>
#include <mutex>

#include "core/error.h"
#include "model/preprocess.h"

namespace sam2rt {

// The current image: the encoder's outputs, and their decoder features on the
// host, downloaded on the first request when the encode left them on the device.
struct Predictor::Image {
  EncoderOutputs outputs;
  std::once_flag host_made;
  DecoderFeatures host;

  const DecoderFeatures& host_features(const ImageEncoder& encoder) {
    std::call_once(host_made, [&] {
      host = outputs.decoder.image_embed.empty() ? encoder.download_decoder_features(outputs.decoder_on_device)
                                                 : outputs.decoder;
    });
    return host;
  }
};

Predictor::Predictor(std::shared_ptr<const Sam2Model> model, MaskFill fill)
    : model_(std::move(model)), fill_(fill) {}

void Predictor::set_image(const RgbImage& image, const EncodeOptions& options) {
  const int size = model_->config().image_size;
  const SamHeads& heads = model_->heads();
  EncodeOptions encode = options;
  encode.decoder_features_on_device = heads.decodes_on_device();
  auto encoded = std::make_shared<Image>();
  encoded->outputs = model_->encoder().encode(preprocess_image(image, size), encode);
  HeadsImage state;
  if (encoded->outputs.decoder.image_embed.empty()) {
    // The device decoder decodes every prompt: the features come to the host only if features() asks.
    state = heads.prepare_image(encoded->outputs.decoder_on_device);
  } else {
    state = heads.prepare_image(encoded->outputs.decoder, encoded->outputs.decoder_on_device);
  }
  image_ = std::move(encoded);
  decoder_state_ = std::move(state);
  orig_width_ = image.width;
  orig_height_ = image.height;
}

void Predictor::set_features(DecoderFeatures features, int orig_width, int orig_height) {
  const DecoderFeatureShapes model_shapes = decoder_feature_shapes(model_->config());
  auto check = [](const Tensor& t, const Shape& expected, const char* name) {
    if (t.shape() != expected) {
      throw Error(std::string("features: '") + name + "' has shape " + shape_to_string(t.shape()) +
                  " but this model needs " + shape_to_string(expected) +
                  "; were they encoded with the same --variant/--config?");
    }
  };
  check(features.image_embed, model_shapes.image_embed, "image_embed");
  check(features.feat_s1, model_shapes.feat_s1, "feat_s1");
  check(features.feat_s0, model_shapes.feat_s0, "feat_s0");
  // Features come from a file the user hands us; NaN/Inf would silently give garbage masks.
  auto check_finite = [](const Tensor& t, const char* name) {
    if (!std::all_of(t.begin(), t.end(), [](float v) { return std::isfinite(v); })) {
      throw Error(std::string("features: '") + name + "' holds NaN or Inf values; encode the image again");
    }
  };
  check_finite(features.image_embed, "image_embed");
  check_finite(features.feat_s1, "feat_s1");
  check_finite(features.feat_s0, "feat_s0");
  if (orig_width <= 0 || orig_height <= 0) throw Error("features: original image size must be positive");
  auto given = std::make_shared<Image>();
  given->outputs.decoder = std::move(features);
  HeadsImage state = model_->heads().prepare_image(given->outputs.decoder);
  image_ = std::move(given);
  decoder_state_ = std::move(state);
  orig_width_ = orig_width;
  orig_height_ = orig_height;
}

void Predictor::set_features(FeatureFile file, bool force) {
  require_features_of(file, identify_model(model_->config(), model_->weights()), force);
  set_features(std::move(file.features), file.orig_width, file.orig_height);
}

void Predictor::require_image() const {
  if (!has_image()) throw Error("no image set: call set_image or set_features before predicting");
}

const DecoderFeatures& Predictor::features() const {
  require_image();
  return image_->host_features(model_->encoder());
}

const EncoderOutputs& Predictor::encoder_outputs() const {
  static const EncoderOutputs none;
  return image_ ? image_->outputs : none;
}

MaskPrediction Predictor::predict(const Prompt& prompt, bool multimask) const {
  validate_prompt(prompt, orig_width_, orig_height_, model_->config());
  require_image();
  return model_->heads().predict(decoder_state_, prompt, multimask, orig_width_, orig_height_, fill_);
}

std::vector<MaskPrediction> Predictor::predict_batch(const std::vector<Prompt>& prompts, bool multimask) const {
  for (const Prompt& prompt : prompts) validate_prompt(prompt, orig_width_, orig_height_, model_->config());
  require_image();
  return model_->heads().predict_batch(decoder_state_, prompts, multimask, orig_width_, orig_height_, fill_);
}

std::vector<MaskPrediction> Predictor::predict_batch_low_res(const std::vector<Prompt>& prompts, bool multimask,
                                                             std::optional<float> skip_masks_iou_at_most) const {
  require_image();
  return model_->heads().predict_batch_low_res(decoder_state_, prompts, multimask, orig_width_, orig_height_,
                                               skip_masks_iou_at_most);
}

}  // namespace sam2rt
