#pragma once

#include <string>
#include <vector>

#include "core/tensor.h"
#include "core/weights.h"
#include "model/config.h"
#include "model/decoder_mlp.h"

namespace sam2rt {

// transformer.Attention: q/k/v projections to the internal width (C, or C/2 for
// the cross attentions), multi-head softmax(q k^T / sqrt(d)) v, out projection.
struct DecoderAttention {
  DecoderLinear q_proj, k_proj, v_proj, out_proj;
  int num_heads = 1;
  static DecoderAttention load(const WeightMap& weights, const std::string& prefix, int num_heads);
  int64_t internal_dim() const { return q_proj.out_features(); }

  // q [Nq, C], k and v [Nk, C] -> [Nq, C].
  Tensor operator()(const Tensor& q, const Tensor& k, const Tensor& v) const;
};

struct DecoderLayerNorm {
  Tensor weight, bias;
  static DecoderLayerNorm load(const WeightMap& weights, const std::string& prefix);
  Tensor operator()(const Tensor& x) const;  // eps 1e-5 (torch default), as in the official TwoWayTransformer
};

// One TwoWayAttentionBlock: token self-attention, token->image cross-attention,
// token MLP (ReLU), image->token cross-attention; post-norm after each.
struct TwoWayAttentionBlock {
  DecoderAttention self_attn, cross_attn_token_to_image, cross_attn_image_to_token;
  DecoderLayerNorm norm1, norm2, norm3, norm4;
  DecoderMlp mlp;
  bool skip_first_layer_pe = false;
};

// The image side of the transformer before any prompt touches it: the flattened
// src (image embedding + dense prompt embedding) and what the first block
// computes from src alone, since its keys are still src. Every prompt with the
// same dense embedding (all prompts without a mask input) shares it.
struct TransformerImageInput {
  Tensor src;               // [HW, C], channels-last
  Tensor token_to_image_k;  // layers[0].cross_attn_token_to_image.k_proj(src + pe)  [HW, D]
  Tensor token_to_image_v;  // layers[0].cross_attn_token_to_image.v_proj(src)       [HW, D]
  Tensor image_to_token_q;  // layers[0].cross_attn_image_to_token.q_proj(src + pe)  [HW, D]
};

// sam_mask_decoder.transformer's weights: depth TwoWayAttentionBlocks, then a
// final token->image attention and LayerNorm. The CPU runs them in the
// low-rank form (LowRankTwoWayTransformer, docs/LOW_RANK.md); the reference
// decoder (MaskDecoder) loads its own copies on its backend.
class TwoWayTransformerWeights {
 public:
  TwoWayTransformerWeights(const ModelConfig& config, const WeightMap& weights, const std::string& prefix);

  // What the first block computes from the image side alone, src [HW, C] and
  // image_pe [HW, C] (both channels-last); image rows are shared by `threads`.
  TransformerImageInput prepare_image(Tensor src, const Tensor& image_pe, int threads) const;

  const std::vector<TwoWayAttentionBlock>& layers() const { return layers_; }
  const DecoderAttention& final_attention() const { return final_attn_token_to_image_; }
  const DecoderLayerNorm& final_norm() const { return norm_final_attn_; }

 private:
  std::vector<TwoWayAttentionBlock> layers_;
  DecoderAttention final_attn_token_to_image_;
  DecoderLayerNorm norm_final_attn_;
};

}  // namespace sam2rt
