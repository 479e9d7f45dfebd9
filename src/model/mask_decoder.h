#pragma once

#include <vector>

#include "core/tensor.h"
#include "core/weights.h"
#include "model/config.h"
#include "model/decoder_mlp.h"
#include "model/features.h"
#include "model/two_way_transformer.h"

namespace sam2rt {

// MaskDecoder.predict_masks for a batch of B prompts on one image: every mask
// token's low-res logits and IoU, before any selection.
struct MaskDecoderOutput {
  Tensor masks;                // [B, T, L, L], T = num_multimask_outputs + 1 mask tokens
  Tensor iou;                  // [B, T] (sigmoid applied)
  Tensor object_score_logits;  // [B]
};

// sam_mask_decoder.* of SAM 2.1 (use_high_res_features, pred_obj_scores with MLP).
class MaskDecoder {
 public:
  MaskDecoder(const ModelConfig& config, const WeightMap& weights);

  int num_mask_tokens() const { return num_mask_tokens_; }

  // features: batch-1 image features shared by all prompts; image_pe [1, C, E, E];
  // sparse [B, N, C] (same N for the whole batch, N may be 0); dense [B, C, E, E].
  MaskDecoderOutput predict_masks(const DecoderFeatures& features, const Tensor& image_pe, const Tensor& sparse,
                                  const Tensor& dense) const;

 private:
  ModelConfig config_;
  int num_mask_tokens_;
  Tensor obj_score_token_, iou_token_, mask_tokens_;
  TwoWayTransformer transformer_;
  Tensor upscale0_w_, upscale0_b_, upscale_norm_w_, upscale_norm_b_, upscale3_w_, upscale3_b_;
  std::vector<DecoderMlp> hypernetworks_;
  DecoderMlp iou_head_;
  DecoderMlp obj_score_head_;
};

}  // namespace sam2rt
