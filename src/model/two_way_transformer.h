#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "core/weights.h"
#include "model/config.h"
#include "model/decoder_mlp.h"

namespace sam2rt {

// transformer.Attention: q/k/v projections to the internal width (C, or C/2 for
// the cross attentions), multi-head softmax(q k^T / sqrt(d)) v, out projection.
// Inputs are batched [B, N, C]; every batch element attends only within itself.
struct DecoderAttention {
  DecoderLinear q_proj, k_proj, v_proj, out_proj;
  int num_heads = 1;
  static DecoderAttention load(const WeightMap& weights, const std::string& prefix, int num_heads);
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

// sam_mask_decoder.transformer: depth TwoWayAttentionBlocks, then a final
// token->image attention and LayerNorm.
class TwoWayTransformer {
 public:
  TwoWayTransformer(const ModelConfig& config, const WeightMap& weights, const std::string& prefix);

  // tokens [B, T, C] (also their own position encoding), image [B, HW, C] (the
  // flattened src), image_pe [1, HW, C] shared by the batch.
  // Returns (queries [B, T, C], keys [B, HW, C]).
  std::pair<Tensor, Tensor> forward(const Tensor& tokens, const Tensor& image, const Tensor& image_pe) const;

 private:
  std::vector<TwoWayAttentionBlock> layers_;
  DecoderAttention final_attn_token_to_image_;
  DecoderLayerNorm norm_final_attn_;
};

}  // namespace sam2rt
