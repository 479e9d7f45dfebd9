#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/sam2_model.h"
#include "io/image.h"
#include "io/mask_rle.h"

namespace sam2rt {

// The parameters of SAM2AutomaticMaskGenerator (sam2/automatic_mask_generator.py),
// with the official names and defaults.
struct AmgParams {
  // Points per side of the layer-0 grid; std::nullopt when point_grids is given.
  std::optional<int> points_per_side = 32;
  int points_per_batch = 64;
  double pred_iou_thresh = 0.8;
  double stability_score_thresh = 0.95;
  double stability_score_offset = 1.0;
  double mask_threshold = 0.0;
  double box_nms_thresh = 0.7;
  int crop_n_layers = 0;
  double crop_nms_thresh = 0.7;
  double crop_overlap_ratio = 512.0 / 1500.0;
  int crop_n_points_downscale_factor = 1;
  // Custom grids, one per crop layer, points (x, y) normalised to [0, 1]; used
  // instead of points_per_side (exactly one of the two must be given).
  std::vector<std::vector<std::array<double, 2>>> point_grids;
  // Passed to the predictor as max_hole_area and max_sprinkle_area, as the official code does.
  double min_mask_region_area = 0;
  bool use_m2m = false;
  bool multimask_output = true;
};

// Throws Error naming the first parameter that the official code would reject or
// that makes no sense (negative grid, threshold outside [0, 1], overlap >= 1, ...).
void validate_amg_params(const AmgParams& params);

// One record of SAM2AutomaticMaskGenerator.generate(); boxes are XYWH as the
// official records (bbox: last set column/row minus first, crop_box: true size).
struct AmgMask {
  UncompressedRle segmentation;  // full-image mask, column-major runs
  int64_t area = 0;
  std::array<int64_t, 4> bbox{};
  float predicted_iou = 0;
  std::array<float, 2> point_coords{};
  float stability_score = 0;
  std::array<int64_t, 4> crop_box{};
};

// Progress of a generate() call: prompts decoded so far out of the total.
using AmgProgress = std::function<void(int64_t done, int64_t total)>;

// SAM2AutomaticMaskGenerator on our predictor: same grids, crops, batches,
// filters, NMS and output order as the official code. Candidates are decided on
// the low-resolution logits where possible and only survivors are upsampled
// row by row, so memory stays bounded on big photos.
class AutomaticMaskGenerator {
 public:
  // encode: how each crop is encoded (e.g. bf16); validates params (Error naming the first bad one).
  AutomaticMaskGenerator(std::shared_ptr<const Sam2Model> model, AmgParams params, EncodeOptions encode = {});

  const AmgParams& params() const { return params_; }

  // image: the whole photo (HWC uint8 RGB). Thread-safe: one generator may run
  // several images at once.
  std::vector<AmgMask> generate(const RgbImage& image, const AmgProgress& progress = {}) const;

 private:
  std::shared_ptr<const Sam2Model> model_;
  AmgParams params_;
  EncodeOptions encode_;
};

}  // namespace sam2rt
