#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "model/config.h"

namespace sam2rt {

// MaskDecoder._get_stability_scores for one logit map:
// count(logit > delta) / count(logit > -delta), 1 when nothing exceeds -delta.
float stability_score(const float* logits, int64_t count, double delta);

// Which mask tokens SAM2ImagePredictor.predict returns.
struct MaskSelection {
  std::vector<int> token_indices;     // multimask: 1..T-1; single mask: {0} or the fallback token
  float stability_score_token0 = 0;   // of token 0's logits (single mask only)
  bool single_mask_token_used = false;
};

// multimask: tokens 1..T-1. Otherwise (build_sam2's dynamic_multimask_via_stability):
// token 0 if its stability score >= config.stability_thresh, else the token among
// 1..T-1 with the highest IoU (first on ties).
// all_logits: T maps of `pixels` values each (multimask: not read, and may be
// null); iou: T values.
MaskSelection select_mask_tokens(const float* all_logits, int64_t pixels, const float* iou, int num_tokens,
                                 bool multimask, const ModelConfig& config);

// SAM2Transforms.postprocess_masks as the image predictor uses it: bilinear
// (align_corners=False) from [M, L, L] straight to [M, orig_h, orig_w].
Tensor upscale_masks_to_original(const Tensor& low_res, int orig_w, int orig_h);

// SAM2Transforms.postprocess_masks' filling, done on the low-res logits before the
// upsampling (the official code needs a CUDA extension for it and skips it on CPU).
struct MaskFill {
  float threshold = 0.0f;        // the predictor's mask_threshold
  double max_hole_area = 0;      // background components of at most this many low-res pixels -> threshold + 10
  double max_sprinkle_area = 0;  // foreground components of at most this many low-res pixels -> threshold - 10
  bool active() const { return max_hole_area > 0 || max_sprinkle_area > 0; }
};

// In place on [M, L, L] logits: 8-connected components of (l <= threshold) and of
// (l > threshold), both found on the unfilled logits, border components included.
void fill_holes_and_sprinkles(Tensor& low_res, const MaskFill& fill);

// sam2.utils.misc.fill_holes_in_mask_scores, as the video predictor applies it
// (fill_hole_area): in place on [..., L, L] logits, every 8-connected component
// of (l <= 0), border ones included, of at most max_area pixels set to 0.1.
void fill_holes_in_mask_scores(Tensor& logits, int64_t max_area);

// The low-res logits predict() returns: clamped to [-32, 32] (after the upsampling
// used the unclamped values).
Tensor clamp_low_res_logits(const Tensor& low_res);

}  // namespace sam2rt
