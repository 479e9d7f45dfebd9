#include "model/mask_decoder.h"

#include <algorithm>
#include <string>

#include "core/error.h"
#include "kernels/activation.h"
#include "kernels/conv_transpose.h"
#include "kernels/gemm.h"
#include "kernels/norm.h"

namespace sam2rt {

namespace {

constexpr float kLayerNorm2dEps = 1e-6f;

// [B, C, H, W] <-> [B, H*W, C]
Tensor channels_last(const Tensor& x) {
  const int64_t b = x.dim(0), c = x.dim(1), hw = x.dim(2) * x.dim(3);
  Tensor y({b, hw, c});
  for (int64_t n = 0; n < b; ++n)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < hw; ++p) y[(n * hw + p) * c + ch] = x[(n * c + ch) * hw + p];
  return y;
}

Tensor channels_first(const Tensor& x, int64_t h, int64_t w) {
  const int64_t b = x.dim(0), hw = x.dim(1), c = x.dim(2);
  Tensor y({b, c, h, w});
  for (int64_t n = 0; n < b; ++n)
    for (int64_t p = 0; p < hw; ++p)
      for (int64_t ch = 0; ch < c; ++ch) y[(n * c + ch) * hw + p] = x[(n * hw + p) * c + ch];
  return y;
}

// x [B, ...] += feature [1, ...] broadcast over the batch.
void add_broadcast_inplace(Tensor& x, const Tensor& feature) {
  const int64_t per_item = feature.numel(), batch = x.numel() / per_item;
  for (int64_t b = 0; b < batch; ++b) {
    float* out = x.data() + b * per_item;
    for (int64_t i = 0; i < per_item; ++i) out[i] += feature[i];
  }
}

// Token t of every batch element: [B, T, C] -> [B, C].
Tensor token_rows(const Tensor& tokens, int64_t t) {
  const int64_t b = tokens.dim(0), n = tokens.dim(1), c = tokens.dim(2);
  Tensor y({b, c});
  for (int64_t i = 0; i < b; ++i) std::copy_n(tokens.data() + (i * n + t) * c, c, y.data() + i * c);
  return y;
}

void check_features(const DecoderFeatures& f, const ModelConfig& config) {
  const int64_t c = config.embed_dim(), e = config.image_embedding_size();
  auto check = [](const Tensor& t, const Shape& want, const char* name) {
    if (t.shape() != want) {
      throw Error(std::string("decoder features: ") + name + " has shape " + shape_to_string(t.shape()) +
                  ", expected " + shape_to_string(want) + " for this model config");
    }
  };
  check(f.image_embed, {1, c, e, e}, "image_embed");
  check(f.feat_s1, {1, c / 4, 2 * e, 2 * e}, "feat_s1");
  check(f.feat_s0, {1, c / 8, 4 * e, 4 * e}, "feat_s0");
}

}  // namespace

MaskDecoder::MaskDecoder(const ModelConfig& config, const WeightMap& weights)
    : config_(config),
      num_mask_tokens_(config.num_multimask_outputs + 1),
      transformer_(config, weights, "sam_mask_decoder.transformer") {
  if (!config.use_high_res_features_in_sam || !config.pred_obj_scores || !config.pred_obj_scores_mlp) {
    throw Error("model config '" + config.name +
                "': the mask decoder needs use_high_res_features_in_sam, pred_obj_scores and pred_obj_scores_mlp "
                "(every SAM 2.1 checkpoint has them)");
  }
  const std::string p = "sam_mask_decoder.";
  obj_score_token_ = weights.at(p + "obj_score_token.weight");
  iou_token_ = weights.at(p + "iou_token.weight");
  mask_tokens_ = weights.at(p + "mask_tokens.weight");
  upscale0_w_ = weights.at(p + "output_upscaling.0.weight");
  upscale0_b_ = weights.at(p + "output_upscaling.0.bias");
  upscale_norm_w_ = weights.at(p + "output_upscaling.1.weight");
  upscale_norm_b_ = weights.at(p + "output_upscaling.1.bias");
  upscale3_w_ = weights.at(p + "output_upscaling.3.weight");
  upscale3_b_ = weights.at(p + "output_upscaling.3.bias");
  for (int i = 0; i < num_mask_tokens_; ++i) {
    hypernetworks_.push_back(DecoderMlp::load(weights, p + "output_hypernetworks_mlps." + std::to_string(i), 3));
  }
  iou_head_ = DecoderMlp::load(weights, p + "iou_prediction_head", config.iou_head_depth,
                               config.iou_prediction_use_sigmoid);
  obj_score_head_ = DecoderMlp::load(weights, p + "pred_obj_score_head", 3);
}

MaskDecoderOutput MaskDecoder::predict_masks(const DecoderFeatures& features, const Tensor& image_pe,
                                             const Tensor& sparse, const Tensor& dense) const {
  check_features(features, config_);
  const int64_t batch = sparse.dim(0), num_sparse = sparse.dim(1), c = config_.embed_dim();
  const int64_t e = config_.image_embedding_size();
  const int64_t output_tokens = 2 + num_mask_tokens_;

  // tokens = [obj_score, iou, mask_0..T-1, sparse prompts]
  Tensor tokens({batch, output_tokens + num_sparse, c});
  for (int64_t b = 0; b < batch; ++b) {
    float* row = tokens.data() + b * (output_tokens + num_sparse) * c;
    row = std::copy_n(obj_score_token_.data(), c, row);
    row = std::copy_n(iou_token_.data(), c, row);
    row = std::copy_n(mask_tokens_.data(), num_mask_tokens_ * c, row);
    std::copy_n(sparse.data() + b * num_sparse * c, num_sparse * c, row);
  }

  Tensor src = dense.clone();
  add_broadcast_inplace(src, features.image_embed);
  const auto [hs, keys] = transformer_.forward(tokens, channels_last(src), channels_last(image_pe));

  // Upscale the image tokens back to 4E x 4E, mixing in the high-resolution features.
  Tensor up = conv_transpose_2x2_stride2(channels_first(keys, e, e), upscale0_w_, upscale0_b_);
  add_broadcast_inplace(up, features.feat_s1);
  up = layer_norm_2d(up, upscale_norm_w_, upscale_norm_b_, kLayerNorm2dEps);
  gelu_inplace(up);
  up = conv_transpose_2x2_stride2(up, upscale3_w_, upscale3_b_);
  add_broadcast_inplace(up, features.feat_s0);
  gelu_inplace(up);

  // Each mask token's hypernetwork gives per-channel weights; the mask is their dot with the upscaled map.
  const int64_t up_c = up.dim(1), l = up.dim(2), pixels = l * up.dim(3);
  Tensor hyper({batch, static_cast<int64_t>(num_mask_tokens_), up_c});
  for (int t = 0; t < num_mask_tokens_; ++t) {
    const Tensor h = hypernetworks_[t](token_rows(hs, 2 + t));
    for (int64_t b = 0; b < batch; ++b) std::copy_n(h.data() + b * up_c, up_c, hyper.data() + (b * num_mask_tokens_ + t) * up_c);
  }
  MaskDecoderOutput out;
  out.masks = Tensor({batch, static_cast<int64_t>(num_mask_tokens_), l, up.dim(3)});
  for (int64_t b = 0; b < batch; ++b) {
    gemm({.m = num_mask_tokens_, .n = pixels, .k = up_c, .a = hyper.data() + b * num_mask_tokens_ * up_c,
          .lda = up_c, .b = up.data() + b * up_c * pixels, .ldb = pixels, .b_transposed = false,
          .c = out.masks.data() + b * num_mask_tokens_ * pixels, .ldc = pixels});
  }
  out.iou = iou_head_(token_rows(hs, 1));
  out.object_score_logits = obj_score_head_(token_rows(hs, 0)).reshaped({batch});
  return out;
}

}  // namespace sam2rt
