#include "model/low_rank_mask_decoder.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>

#include "core/error.h"
#include "kernels/buffer_pool.h"
#include "kernels/conv_transpose.h"
#include "kernels/gelu.h"
#include "kernels/decoder_rows.h"
#include "kernels/decoder/threads.h"
#include "kernels/gemm.h"
#include "kernels/layout.h"
#include "kernels/decoder/mask_products.h"
#include "kernels/stage_profile.h"
#include "kernels/decoder/thread_scratch.h"

namespace sam2rt {

namespace {

constexpr float kLayerNorm2dEps = 1e-6f;
// Rows of the E x E token grid per block of the upscaling pass: 2 rows make
// 8 rows of the 4E x 4E map, a few hundred KB of scratch per thread.
constexpr int64_t kUpscaleRowBlock = 2;
// Rows of the decoder's tokens: [object score, IoU, mask tokens..., prompt tokens...].
constexpr int64_t kObjectScoreToken = 0, kIouToken = 1, kFirstMaskToken = 2;
// Image rows per block of the per-image projection (as in the transformer).
constexpr int64_t kImageRowBlock = 256;

// [1, C, H, W] -> [H*W, C], on the process's pool: the per-image state reuses
// memory the encoder has given back instead of touching fresh pages.
Tensor channels_last(const Tensor& nchw) {
  Tensor hwc = BufferPool::shared().tensor({nchw.dim(2) * nchw.dim(3), nchw.dim(1)});
  nchw_to_hwc_into(nchw, hwc);
  return hwc;
}

// Row t of [T, C] tokens as a [1, C] tensor.
Tensor token_row(const Tensor& tokens, int64_t t) {
  const int64_t c = tokens.dim(1);
  Tensor row({1, c});
  std::copy_n(tokens.data() + t * c, c, row.data());
  return row;
}

// Every prompt's low-res logits ([T, L, L], 1 MB for SAM 2.1) on recycled memory:
// fresh memory costs a page fault per 4 KiB, and a batch of prompts would fault
// them in again on every call.
Tensor mask_logits(Shape shape) {
  BufferPool& pool = BufferPool::shared();
  return pool.tensor(std::move(shape));
}

const ModelConfig& checked(const ModelConfig& config) {
  if (!config.use_high_res_features_in_sam || !config.pred_obj_scores || !config.pred_obj_scores_mlp) {
    throw Error("model config '" + config.name +
                "': the mask decoder needs use_high_res_features_in_sam, pred_obj_scores and pred_obj_scores_mlp "
                "(every SAM 2.1 checkpoint has them)");
  }
  if (!LowRankMaskDecoder::applies(config)) {
    throw Error("model config '" + config.name + "': the low-rank mask decoder needs decoder_depth 2, not " +
                std::to_string(config.decoder_depth));
  }
  return config;
}

}  // namespace

LowRankMaskDecoder::LowRankMaskDecoder(const ModelConfig& config, const WeightMap& weights, const Tensor& image_pe)
    : config_(checked(config)),
      num_mask_tokens_(config.num_multimask_outputs + 1),
      image_pe_(channels_last(image_pe)),
      transformer_(config, weights, "sam_mask_decoder.transformer"),
      low_rank_(transformer_) {
  const std::string p = "sam_mask_decoder.";
  obj_score_token_ = weights.at(p + "obj_score_token.weight");
  iou_token_ = weights.at(p + "iou_token.weight");
  mask_tokens_ = weights.at(p + "mask_tokens.weight");
  upscale0_taps_ = pack_conv_transpose_2x2_taps(weights.at(p + "output_upscaling.0.weight"));
  upscale0_b_ = weights.at(p + "output_upscaling.0.bias");
  upscale_norm_w_ = weights.at(p + "output_upscaling.1.weight");
  upscale_norm_b_ = weights.at(p + "output_upscaling.1.bias");
  upscale3_tap_rows_ = pack_conv_transpose_2x2_tap_rows(weights.at(p + "output_upscaling.3.weight"));
  upscale3_b_ = weights.at(p + "output_upscaling.3.bias");
  for (int i = 0; i < num_mask_tokens_; ++i) {
    hypernetworks_.push_back(DecoderMlp::load(weights, p + "output_hypernetworks_mlps." + std::to_string(i), 3));
  }
  iou_head_ = DecoderMlp::load(weights, p + "iou_prediction_head", config.iou_head_depth,
                               config.iou_prediction_use_sigmoid);
  obj_score_head_ = DecoderMlp::load(weights, p + "pred_obj_score_head", 3);
}

void check_decoder_features(const DecoderFeatures& f, const ModelConfig& config) {
  const DecoderFeatureShapes want = decoder_feature_shapes(config);
  auto check = [](const Tensor& t, const Shape& want, const char* name) {
    if (t.shape() != want) {
      throw Error(std::string("decoder features: ") + name + " has shape " + shape_to_string(t.shape()) +
                  ", expected " + shape_to_string(want) + " for this model config");
    }
  };
  check(f.image_embed, want.image_embed, "image_embed");
  check(f.feat_s1, want.feat_s1, "feat_s1");
  check(f.feat_s0, want.feat_s0, "feat_s0");
}

DecoderImageState LowRankMaskDecoder::prepare_image(const DecoderFeatures& features, const Tensor& no_mask_dense,
                                                    int threads) const {
  check_decoder_features(features, config_);
  DecoderImageState image{.image_embed = channels_last(features.image_embed),
                          .no_mask = {},
                          .feat_s1 = channels_last(features.feat_s1),
                          .feat_s0_taps = BufferPool::shared().tensor({features.feat_s0.numel()}),
                          .low_rank = {},
                          .upscale0_shared = {}};
  nchw_to_2x2_taps_into(features.feat_s0, image.feat_s0_taps);
  // src = dense + image_embed (MaskDecoder.predict_masks), flattened channels-last.
  Tensor src = channels_last(no_mask_dense);
  add_rows_inplace(src.data(), image.image_embed.data(), src.numel());
  image.no_mask = transformer_.prepare_image(std::move(src), image_pe_, threads);
  image.low_rank = low_rank_.prepare_image(image.no_mask, image_pe_, threads);
  const Tensor& shared = image.low_rank.final_shared;
  const int64_t c = shared.dim(1), taps = upscale0_taps_.dim(1);
  image.upscale0_shared = BufferPool::shared().tensor({shared.dim(0), taps});
  for_row_blocks(threads, shared.dim(0), kImageRowBlock, [&](int64_t r0, int64_t r1) {
    gemm({.m = r1 - r0, .n = taps, .k = c, .a = shared.data() + r0 * c, .lda = c, .b = upscale0_taps_.data(),
          .ldb = taps, .b_transposed = false, .c = image.upscale0_shared.data() + r0 * taps, .ldc = taps});
  });
  image.low_rank.final_shared = Tensor();
  return image;
}

Tensor LowRankMaskDecoder::tokens(const Tensor& sparse) const {
  const int64_t num_sparse = sparse.numel() / config_.embed_dim(), c = config_.embed_dim();
  // tokens = [obj_score, iou, mask_0..T-1, sparse prompts]
  Tensor tokens({2 + num_mask_tokens_ + num_sparse, c});
  float* row = tokens.data();
  row = std::copy_n(obj_score_token_.data(), c, row);
  row = std::copy_n(iou_token_.data(), c, row);
  row = std::copy_n(mask_tokens_.data(), num_mask_tokens_ * c, row);
  std::copy_n(sparse.data(), num_sparse * c, row);
  return tokens;
}

void LowRankMaskDecoder::iou_head(const Tensor& iou_token, MaskDecoderOutput& result) const {
  ScopedStage stage("decoder: output heads");
  result.iou = iou_head_(iou_token).reshaped({static_cast<int64_t>(num_mask_tokens_)});
}

Tensor LowRankMaskDecoder::mask_heads(const Tensor& final_tokens, int64_t object_row, int64_t first_mask_row,
                               MaskDecoderOutput& result) const {
  // Each mask token's hypernetwork gives per-channel weights; the mask is their dot with the upscaled map.
  ScopedStage stage("decoder: output heads");
  result.object_score_logit = obj_score_head_(token_row(final_tokens, object_row))[0];
  const int64_t up_c = upscale3_b_.numel(), first = result.first_mask_token, masks = num_mask_tokens_ - first;
  result.mask_tokens_out = final_tokens.rows(first_mask_row, masks).clone();
  Tensor hyper({masks, up_c});
  for (int64_t m = 0; m < masks; ++m) {
    const Tensor h = hypernetworks_[static_cast<size_t>(first + m)](token_row(final_tokens, first_mask_row + m));
    std::copy_n(h.data(), up_c, hyper.data() + m * up_c);
  }
  return hyper;
}

template <typename FirstConv>
void LowRankMaskDecoder::upscale(const DecoderImageState& image, const std::vector<const Tensor*>& hypers,
                          FirstConv first_conv, const std::vector<MaskDecoderOutput*>& results, int threads) const {
  // Upscale the image tokens back to 4E x 4E, mixing in the high-resolution
  // features, a band of rows at a time: ConvTranspose + feat_s1 (one pass),
  // LayerNorm2d, GELU, ConvTranspose + feat_s0 (one pass), GELU, then the
  // hypernetwork dot products. The prompts take turns within each band, so that
  // its rows of the per-image maps are read from memory once for all of them.
  ScopedStage stage("decoder: upscaling + mask products");
  const int64_t e = config_.image_embedding_size();
  const int64_t up1_c = upscale0_b_.numel(), up_c = upscale3_b_.numel();
  const int64_t l = 4 * e, pixels = l * l;
  for (size_t g = 0; g < results.size(); ++g) results[g]->masks = mask_logits({hypers[g]->dim(0), l, l});
  for_row_blocks(threads, e, kUpscaleRowBlock, [&](int64_t i0, int64_t i1) {
    const int64_t rows = i1 - i0;
    const int64_t up1_rows = 2 * rows, up1_pixels = up1_rows * 2 * e;
    float* const scratch = thread_scratch(0, std::max(rows * e * 4 * up1_c, up1_pixels * 4 * up_c));
    float* const up1 = thread_scratch(1, up1_pixels * up1_c);
    float* const up = thread_scratch(2, 2 * e);
    for (size_t g = 0; g < results.size(); ++g) {
      first_conv(g, i0, rows, image.feat_s1.data() + 2 * i0 * 2 * e * up1_c, up1, scratch);
      // The elementwise steps a map row at a time, while the row is in L1.
      const int64_t up1_row = 2 * e * up1_c;
      for (int64_t r = 0; r < up1_rows; ++r) {
        float* const row = up1 + r * up1_row;
        add_layer_norm_rows(row, nullptr, 2 * e, up1_c, upscale_norm_w_.data(), upscale_norm_b_.data(),
                            kLayerNorm2dEps);
        gelu_exact_inplace(row, up1_row);
      }
      // The second ConvTranspose's products for the band as planar taps (a row
      // per tap and channel), then per row of its input the two rows of the
      // 4E x 4E map it makes (+ bias + feat_s0), GELU and the mask products.
      const int64_t taps = upscale3_tap_rows_.dim(0);
      gemm({.m = taps, .n = up1_rows * 2 * e, .k = up1_c, .a = upscale3_tap_rows_.data(), .lda = up1_c, .b = up1,
            .ldb = up1_c, .b_transposed = true, .c = scratch, .ldc = up1_rows * 2 * e});
      for (int64_t r = 0; r < up1_rows; ++r) {
        const int64_t first_pixel = (4 * i0 + 2 * r) * l;
        upscaled_mask_products({.taps = scratch + r * 2 * e, .ld_taps = up1_rows * 2 * e, .w = 2 * e, .cout = up_c,
                                .bias = upscale3_b_.data(),
                                .skip = image.feat_s0_taps.data() + (2 * i0 + r) * taps * 2 * e,
                                .hyper = hypers[g]->data(), .masks = hypers[g]->dim(0),
                                .out = results[g]->masks.data() + first_pixel, .ldo = pixels, .scratch = up});
      }
    }
  });
}

MaskDecoderOutput LowRankMaskDecoder::predict_masks(const DecoderImageState& image, const Tensor& sparse, int threads,
                                             const MasksWanted& wanted, MaskTokens mask_tokens) const {
  return std::move(predict_masks(image, std::vector<Tensor>{sparse}, threads, wanted, mask_tokens).front());
}

std::vector<MaskDecoderOutput> LowRankMaskDecoder::predict_masks(const DecoderImageState& image,
                                                          const std::vector<Tensor>& sparse, int threads,
                                                          const MasksWanted& wanted, MaskTokens mask_tokens) const {
  const size_t count = sparse.size();
  std::vector<MaskDecoderOutput> results(count);
  const int64_t first = first_mask_token(mask_tokens);
  for (MaskDecoderOutput& result : results) result.first_mask_token = first;
  std::vector<Tensor> prompt_tokens(count);
  for (size_t g = 0; g < count; ++g) prompt_tokens[g] = tokens(sparse[g]);
  // The final attention for the IoU token of every prompt (in the
  // transformer's last pass), then for the object score and mask tokens of the
  // prompts whose masks are wanted: the prompt tokens' outputs are never read.
  const std::vector<LowRankTwoWayTransformer::Output> out =
      low_rank_.forward(prompt_tokens, image.no_mask, image.low_rank, {kIouToken}, threads);
  std::vector<const LowRankTwoWayTransformer::Output*> kept;
  std::vector<MaskDecoderOutput*> upscaled;
  for (size_t g = 0; g < count; ++g) {
    iou_head(out[g].finished, results[g]);
    if (wanted && !wanted(results[g].iou)) continue;
    kept.push_back(&out[g]);
    upscaled.push_back(&results[g]);
  }
  if (upscaled.empty()) return results;
  // Row 0 of each final_tokens the object score's token, rows 1.. the mask tokens asked for.
  std::vector<int64_t> mask_rows{kObjectScoreToken};
  for (int64_t t = first; t < num_mask_tokens_; ++t) mask_rows.push_back(kFirstMaskToken + t);
  const std::vector<Tensor> final_tokens = low_rank_.final_tokens(kept, mask_rows, image.low_rank, threads);
  // The first ConvTranspose of each prompt's factored rows: row_scale * (shared
  // taps) + coef (basis taps) + (bias taps + the layer's bias), then the scatter.
  const int64_t e = config_.image_embedding_size(), c = config_.embed_dim();
  const int64_t taps = upscale0_taps_.dim(1), up1_c = taps / 4;
  std::vector<Tensor> hypers, basis_taps, bias_taps;
  for (size_t u = 0; u < kept.size(); ++u) {
    hypers.push_back(mask_heads(final_tokens[u], 0, 1, *upscaled[u]));
    const LowRankKeys& k = kept[u]->keys;
    const int64_t r = k.basis.dim(0);
    Tensor basis = Tensor::uninitialized({r, taps}), bias = Tensor::uninitialized({1, taps});
    gemm({.m = r, .n = taps, .k = c, .a = k.basis.data(), .lda = c, .b = upscale0_taps_.data(), .ldb = taps,
          .b_transposed = false, .c = basis.data(), .ldc = taps});
    for (int64_t j = 0; j < taps; ++j) bias[j] = upscale0_b_[j % up1_c];
    gemm({.m = 1, .n = taps, .k = c, .a = k.bias.data(), .lda = c, .b = upscale0_taps_.data(), .ldb = taps,
          .b_transposed = false, .c = bias.data(), .ldc = taps, .accumulate = true});
    basis_taps.push_back(std::move(basis));
    bias_taps.push_back(std::move(bias));
  }
  std::vector<const Tensor*> hyper_of(hypers.size());
  for (size_t u = 0; u < hypers.size(); ++u) hyper_of[u] = &hypers[u];
  upscale(
      image, hyper_of,
      [&](size_t u, int64_t i0, int64_t rows, const float* skip, float* up1, float* scratch) {
        const LowRankKeys& k = kept[u]->keys;
        const int64_t first = i0 * e, count_rows = rows * e, r = k.basis.dim(0);
        scale_rows_add(k.row_scale.data() + first, image.upscale0_shared.data() + first * taps, taps,
                       bias_taps[u].data(), 0, count_rows, taps, scratch, taps);
        gemm({.m = count_rows, .n = taps, .k = r, .a = k.coef.data() + first * r, .lda = r,
              .b = basis_taps[u].data(), .ldb = taps, .b_transposed = false, .c = scratch, .ldc = taps,
              .accumulate = true});
        scatter_2x2_taps(scratch, rows, e, up1_c, nullptr, skip, up1);
      },
      upscaled, threads);
  return results;
}

}  // namespace sam2rt
