#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "api/feature_file.h"
#include "api/sam2_model.h"
#include "io/image.h"
#include "model/features.h"
#include "model/image_encoder.h"
#include "model/sam_heads.h"
#include "model/prompt.h"

namespace sam2rt {

// The SAM2ImagePredictor workflow: set an image once (or load its saved
// features), then predict masks for any number of prompts on it.
class Predictor {
 public:
  // fill: SAM2ImagePredictor's mask_threshold, max_hole_area and max_sprinkle_area.
  explicit Predictor(std::shared_ptr<const Sam2Model> model, MaskFill fill = {});

  // Preprocesses (Pillow bilinear + normalise) and encodes the photo. With the
  // mask decoder on a device the features stay there (one upload, no download):
  // features() downloads them when first asked, and encoder_outputs() holds
  // host tensors only if options.download_outputs asked for them.
  void set_image(const RgbImage& image, const EncodeOptions& options = {});
  // Reuses features this process computed with the same model (shapes are checked).
  void set_features(DecoderFeatures features, int orig_width, int orig_height);
  // Reuses features saved by `sam2rt encode`: refuses, with one line naming both
  // sides, a file another model, config or preprocessing made, or one without that
  // record; `force` uses them anyway (shapes are still checked).
  void set_features(FeatureFile file, bool force = false);

  bool has_image() const { return image_ != nullptr; }
  int orig_width() const { return orig_width_; }
  int orig_height() const { return orig_height_; }
  // The image's decoder features on the host, NCHW. Features left on a device
  // are downloaded on the first call (thread-safe, once per image), bit for bit
  // what the encode would have downloaded.
  const DecoderFeatures& features() const;
  // The encoder outputs of the last set_image as the encode returned them (only
  // `decoder` after set_features; nothing before any image): see set_image for
  // when their host tensors are empty.
  const EncoderOutputs& encoder_outputs() const;

  MaskPrediction predict(const Prompt& prompt, bool multimask) const;
  std::vector<MaskPrediction> predict_batch(const std::vector<Prompt>& prompts, bool multimask) const;
  // predict_batch without the upsampling (SamHeads::predict_batch_low_res, which
  // explains skip_masks_iou_at_most).
  std::vector<MaskPrediction> predict_batch_low_res(const std::vector<Prompt>& prompts, bool multimask,
                                                    std::optional<float> skip_masks_iou_at_most = std::nullopt) const;

  const Sam2Model& model() const { return *model_; }
  const MaskFill& fill() const { return fill_; }

 private:
  struct Image;
  void require_image() const;

  std::shared_ptr<const Sam2Model> model_;
  MaskFill fill_;
  std::shared_ptr<Image> image_;  // shared by copies of this predictor: the same image
  HeadsImage decoder_state_;      // what every prompt on the current image shares
  int orig_width_ = 0;
  int orig_height_ = 0;
};

}  // namespace sam2rt
