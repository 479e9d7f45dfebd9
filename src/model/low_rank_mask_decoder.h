#pragma once

#include <vector>

#include "core/tensor.h"
#include "core/weights.h"
#include "model/config.h"
#include "model/decoder_mlp.h"
#include "model/features.h"
#include "model/low_rank_two_way.h"
#include "model/mask_decoder_output.h"
#include "model/two_way_weights.h"

namespace sam2rt {

// What the low-rank decoder reuses across the prompts on one image (every
// prompt without a mask input), channels-last.
struct DecoderImageState {
  Tensor image_embed;              // [E*E, C]
  TransformerImageInput no_mask;   // the transformer's input (src = image_embed + no_mask_embed)
  Tensor feat_s1;                  // [(2E)^2, C/4]
  Tensor feat_s0_taps;             // feat_s0 as the second ConvTranspose's planar taps [2E, 4 * C/8, 2E]
  LowRankImage low_rank;           // its final_shared already projected into upscale0_shared, then dropped
  Tensor upscale0_shared;          // final_shared through the first ConvTranspose's taps [E*E, 4 * C/4]
};

// Error naming the first feature whose shape is not the model's (NCHW, features.h).
void check_decoder_features(const DecoderFeatures& features, const ModelConfig& config);

// The CPU fast path of sam_mask_decoder.* (SAM 2.1: use_high_res_features,
// pred_obj_scores with MLP) for prompts without a mask input: the two-way
// transformer in its low-rank form (LowRankTwoWayTransformer,
// docs/LOW_RANK.md), whose image side is computed once per image, then the
// upscaling, hypernetwork and IoU heads a band of image rows at a time. The
// same function as the reference decoder (MaskDecoder, which decodes every
// other prompt) in exact arithmetic; the rounding differs. SamHeads chooses
// between them (SamHeads::uses_low_rank).
class LowRankMaskDecoder {
 public:
  // Whether the low-rank form applies to a model: two transformer blocks, as
  // in every SAM 2.1 model.
  static bool applies(const ModelConfig& config) { return config.decoder_depth == 2; }

  // image_pe: get_dense_pe() [1, C, E, E]. Error where the form does not apply.
  LowRankMaskDecoder(const ModelConfig& config, const WeightMap& weights, const Tensor& image_pe);

  int num_mask_tokens() const { return num_mask_tokens_; }

  // Checks the feature shapes (Error naming the mismatch) and precomputes the
  // per-image state; no_mask_dense: the dense embedding of a prompt without mask [1, C, E, E].
  DecoderImageState prepare_image(const DecoderFeatures& features, const Tensor& no_mask_dense, int threads) const;

  // sparse [1, N, C] (N may be 0) of one prompt. The result does not depend on `threads`.
  MaskDecoderOutput predict_masks(const DecoderImageState& image, const Tensor& sparse, int threads,
                                  const MasksWanted& wanted = {}, MaskTokens mask_tokens = MaskTokens::kAll) const;
  // Several prompts in lockstep (LowRankTwoWayTransformer's group forward,
  // then the upscaling a band of rows at a time for all of them): the
  // per-image arrays are read once per group instead of once per prompt.
  // Output g equals predict_masks(image, sparse[g], threads, wanted, mask_tokens) bit for bit.
  std::vector<MaskDecoderOutput> predict_masks(const DecoderImageState& image, const std::vector<Tensor>& sparse,
                                               int threads, const MasksWanted& wanted = {},
                                               MaskTokens mask_tokens = MaskTokens::kAll) const;

  const LowRankTwoWayTransformer& transformer() const { return low_rank_; }
  // [obj_score, iou, mask tokens..., the prompt's sparse rows]: the transformer's input tokens.
  Tensor tokens(const Tensor& sparse) const;

 private:
  // The IoU head on the final IoU token [1, C].
  void iou_head(const Tensor& iou_token, MaskDecoderOutput& result) const;
  // The first mask token computed (0 or 1).
  static int64_t first_mask_token(MaskTokens mask_tokens) { return mask_tokens == MaskTokens::kAll ? 0 : 1; }
  // The object-score head on row object_row of the final tokens, and the
  // hypernetworks on the mask tokens result.first_mask_token.. from row
  // first_mask_row: returns each mask's weights of the upscaled map's channels
  // [M, C/8].
  Tensor mask_heads(const Tensor& final_tokens, int64_t object_row, int64_t first_mask_row,
                    MaskDecoderOutput& result) const;
  // The upscaling pass of one or more prompts (hypers[g], results[g]);
  // first_conv(g, i0, rows, skip, up1, scratch) writes prompt g's first
  // ConvTranspose output (bias included) plus skip (those rows of feat_s1) for
  // the E-grid rows [i0, i0 + rows), channels last.
  template <typename FirstConv>
  void upscale(const DecoderImageState& image, const std::vector<const Tensor*>& hypers, FirstConv first_conv,
               const std::vector<MaskDecoderOutput*>& results, int threads) const;

  ModelConfig config_;
  int num_mask_tokens_;
  Tensor image_pe_;  // [E*E, C]
  Tensor obj_score_token_, iou_token_, mask_tokens_;
  TwoWayTransformerWeights transformer_;
  LowRankTwoWayTransformer low_rank_;
  Tensor upscale0_taps_, upscale0_b_, upscale_norm_w_, upscale_norm_b_, upscale3_b_;
  Tensor upscale3_tap_rows_;  // the second ConvTranspose's taps as rows [4 * C/8, C/4], row (dy*2+dx)*C/8+o
  std::vector<DecoderMlp> hypernetworks_;
  DecoderMlp iou_head_;
  DecoderMlp obj_score_head_;
};

}  // namespace sam2rt
