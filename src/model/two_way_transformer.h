#pragma once

#include <string>
#include <vector>

#include "core/tensor.h"
#include "core/weights.h"
#include "model/config.h"
#include "model/decoder_mlp.h"

namespace sam2rt {

// Many image rows attending to a few tokens, with the token side folded into the
// weights: per head h, q_h k_h^T = x (Wq_h^T k_h^T) + bq_h k_h^T and
// P_h v_h Wo_h^T = P_h (v_h Wo_h^T), so a block of rows costs two GEMMs of width
// heads * tokens instead of the q projection, per-head attention and out
// projection. Same algebra as DecoderAttention, rounded in a different order.
struct FoldedTokenAttention {
  int64_t heads = 1, tokens = 0;
  Tensor score_weight;  // [heads * tokens, in], the 1/sqrt(d) scale included
  Tensor score_bias;    // [heads * tokens]
  Tensor value_out;     // [heads * tokens, C]
  Tensor out_bias;      // [C]

  // Rows x [rows, in] -> attention output [rows, C] (out_proj applied).
  void apply(const float* x, int64_t rows, float* out) const;
};

// transformer.Attention: q/k/v projections to the internal width (C, or C/2 for
// the cross attentions), multi-head softmax(q k^T / sqrt(d)) v, out projection.
struct DecoderAttention {
  DecoderLinear q_proj, k_proj, v_proj, out_proj;
  int num_heads = 1;
  static DecoderAttention load(const WeightMap& weights, const std::string& prefix, int num_heads);
  int64_t internal_dim() const { return q_proj.out_features(); }

  // q [Nq, C], k and v [Nk, C] -> [Nq, C].
  Tensor operator()(const Tensor& q, const Tensor& k, const Tensor& v) const;
  // The attention and out projection on inputs already projected by q/k/v_proj:
  // q [nq, D], k and v [nk, D] rows -> out [nq, C] rows.
  // Heads are shared by `threads` workers.
  void attend_projected(const float* q, int64_t nq, const float* k, const float* v, int64_t nk, float* out,
                        int threads) const;

  // Few queries over many image rows without projecting the image side: per head
  // h, q_h k_h^T = (q_h Wk_h) x^T + a constant per query (which softmax drops), and
  // P v_h = (P x) Wv_h^T + bv_h because each row of P sums to 1. q [nq, D] are
  // q_proj outputs; keys_pe [n, C] are the k_proj inputs, values [n, C] the v_proj
  // inputs -> out [nq, C] (out_proj applied). The (query, head) pairs are shared
  // by `threads` threads.
  void attend_image(const float* q, int64_t nq, const float* keys_pe, const float* values, int64_t n, float* out,
                    int threads) const;

  // This attention with the given tokens' projected keys and values [T, D] folded
  // in, for queries that are q_proj inputs [rows, C] (project_queries) or
  // q_proj outputs [rows, D].
  FoldedTokenAttention fold_tokens(const Tensor& token_k, const Tensor& token_v, bool project_queries) const;
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

// sam_mask_decoder.transformer: depth TwoWayAttentionBlocks, then a final
// token->image attention and LayerNorm. Runs one prompt at a time on
// channels-last image rows; the image-side steps of a block run as one
// row-parallel pass on `threads` threads (see kernels/decoder_threads.h).
class TwoWayTransformer {
 public:
  TwoWayTransformer(const ModelConfig& config, const WeightMap& weights, const std::string& prefix);

  // src [HW, C], image_pe [HW, C] (both channels-last).
  TransformerImageInput prepare_image(Tensor src, const Tensor& image_pe, int threads) const;

  struct Output {
    Tensor queries;  // [T, C]
    Tensor keys;     // [HW, C]
  };
  // tokens [T, C] (also their own position encoding).
  Output forward(const Tensor& tokens, const TransformerImageInput& image, const Tensor& image_pe, int threads) const;

  const std::vector<TwoWayAttentionBlock>& layers() const { return layers_; }
  const DecoderAttention& final_attention() const { return final_attn_token_to_image_; }
  const DecoderLayerNorm& final_norm() const { return norm_final_attn_; }

 private:
  std::vector<TwoWayAttentionBlock> layers_;
  DecoderAttention final_attn_token_to_image_;
  DecoderLayerNorm norm_final_attn_;
};

}  // namespace sam2rt
