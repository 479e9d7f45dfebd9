#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "core/tensor.h"
#include "core/weights.h"
#include "model/config.h"
#include "model/decoder_mlp.h"
#include "model/features.h"
#include "model/low_rank_two_way.h"
#include "model/two_way_transformer.h"

namespace sam2rt {

// MaskDecoder.predict_masks for one prompt: the low-res logits of the mask
// tokens asked for (MaskTokens) and every mask token's IoU, before any selection.
struct MaskDecoderOutput {
  Tensor masks;                    // [T - first_mask_token, L, L], T = num_multimask_outputs + 1 mask tokens
  int64_t first_mask_token = 0;    // the token of masks' first row
  Tensor iou;                      // [T] (sigmoid applied)
  float object_score_logit = 0;    // with the masks: 0 where the IoU filter skipped them
};

// The mask tokens whose logits a prediction computes: all of them, or only
// tokens 1..T-1, all a multimask prediction selects (MaskDecoder.forward's
// masks[:, 1:]); token 0's final attention, hypernetwork and mask products are
// then skipped.
enum class MaskTokens { kAll, kMultimaskOnly };

// Asked with the prompt's IoU predictions [T] before the upscaling: false when
// none of its masks will be read, and the mask tokens, the object score and the
// upscaling are skipped (masks stays empty).
using MasksWanted = std::function<bool(const Tensor& iou)>;

// What the decoder reuses across prompts on one image, channels-last.
struct DecoderImageState {
  Tensor image_embed;              // [E*E, C]
  TransformerImageInput no_mask;   // for prompts without a mask input (src = image_embed + no_mask_embed)
  Tensor feat_s1;                  // [(2E)^2, C/4]
  Tensor feat_s0_taps;             // feat_s0 as the second ConvTranspose's planar taps [2E, 4 * C/8, 2E]
  // For prompts without a mask input, when the low-rank form applies (else empty):
  LowRankImage low_rank;           // its final_shared already projected into upscale0_shared, then dropped
  Tensor upscale0_shared;          // final_shared through the first ConvTranspose's taps [E*E, 4 * C/4]
};

// Error naming the first feature whose shape is not the model's (NCHW, features.h).
void check_decoder_features(const DecoderFeatures& features, const ModelConfig& config);

// sam_mask_decoder.* of SAM 2.1 (use_high_res_features, pred_obj_scores with MLP).
class MaskDecoder {
 public:
  // image_pe: get_dense_pe() [1, C, E, E].
  MaskDecoder(const ModelConfig& config, const WeightMap& weights, const Tensor& image_pe);

  int num_mask_tokens() const { return num_mask_tokens_; }

  // Checks the feature shapes (Error naming the mismatch) and precomputes the
  // per-image state; no_mask_embed: the dense embedding of a prompt without mask [1, C, E, E].
  DecoderImageState prepare_image(const DecoderFeatures& features, const Tensor& no_mask_dense, int threads) const;

  // The transformer input of a prompt with a mask input (dense [1, C, E, E]).
  TransformerImageInput prepare_dense(const DecoderImageState& image, const Tensor& dense, int threads) const;

  // sparse [1, N, C] (N may be 0); `input` is image.no_mask or prepare_dense's result.
  MaskDecoderOutput predict_masks(const DecoderImageState& image, const TransformerImageInput& input,
                                  const Tensor& sparse, int threads, const MasksWanted& wanted = {},
                                  MaskTokens mask_tokens = MaskTokens::kAll) const;
  // A prompt without mask input: the low-rank form (LowRankTwoWayTransformer)
  // where it applies, else predict_masks(image, image.no_mask, ...). The result
  // does not depend on `threads`.
  MaskDecoderOutput predict_masks(const DecoderImageState& image, const Tensor& sparse, int threads,
                                  const MasksWanted& wanted = {}, MaskTokens mask_tokens = MaskTokens::kAll) const;
  // Several prompts without mask input in lockstep (LowRankTwoWayTransformer's
  // group forward, then the upscaling a band of rows at a time for all of them):
  // the per-image arrays are read once per group instead of once per prompt.
  // Output g equals predict_masks(image, sparse[g], threads, wanted, mask_tokens) bit for bit.
  std::vector<MaskDecoderOutput> predict_masks(const DecoderImageState& image, const std::vector<Tensor>& sparse,
                                               int threads, const MasksWanted& wanted = {},
                                               MaskTokens mask_tokens = MaskTokens::kAll) const;

 private:
  Tensor tokens(const Tensor& sparse) const;
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
  TwoWayTransformer transformer_;
  std::optional<LowRankTwoWayTransformer> low_rank_;
  Tensor upscale0_taps_, upscale0_b_, upscale_norm_w_, upscale_norm_b_, upscale3_b_;
  Tensor upscale3_tap_rows_;  // the second ConvTranspose's taps as rows [4 * C/8, C/4], row (dy*2+dx)*C/8+o
  std::vector<DecoderMlp> hypernetworks_;
  DecoderMlp iou_head_;
  DecoderMlp obj_score_head_;
};

}  // namespace sam2rt
