#include "model/two_way_transformer.h"

#include <cmath>

#include "core/error.h"
#include "kernels/attention.h"
#include "kernels/norm.h"

namespace sam2rt {

namespace {

constexpr float kTransformerLayerNormEps = 1e-5f;

Tensor add(const Tensor& a, const Tensor& b) {
  Tensor y(a.shape());
  for (int64_t i = 0; i < a.numel(); ++i) y[i] = a[i] + b[i];
  return y;
}

// x [B, N, C] + pe [1, N, C] broadcast over the batch.
Tensor add_position(const Tensor& x, const Tensor& pe) {
  const int64_t per_item = pe.numel(), batch = x.numel() / per_item;
  Tensor y(x.shape());
  for (int64_t b = 0; b < batch; ++b) {
    const float* in = x.data() + b * per_item;
    float* out = y.data() + b * per_item;
    for (int64_t i = 0; i < per_item; ++i) out[i] = in[i] + pe[i];
  }
  return y;
}

}  // namespace

DecoderAttention DecoderAttention::load(const WeightMap& weights, const std::string& prefix, int num_heads) {
  DecoderAttention a{DecoderLinear::load(weights, prefix + ".q_proj"), DecoderLinear::load(weights, prefix + ".k_proj"),
                     DecoderLinear::load(weights, prefix + ".v_proj"),
                     DecoderLinear::load(weights, prefix + ".out_proj"), num_heads};
  if (a.q_proj.weight.dim(0) % num_heads != 0) {
    throw Error(prefix + ": internal width " + std::to_string(a.q_proj.weight.dim(0)) + " is not divisible by " +
                std::to_string(num_heads) + " heads");
  }
  return a;
}

Tensor DecoderAttention::operator()(const Tensor& q_in, const Tensor& k_in, const Tensor& v_in) const {
  const Tensor q = q_proj(q_in), k = k_proj(k_in), v = v_proj(v_in);
  const int64_t batch = q.dim(0), nq = q.dim(1), nk = k.dim(1), width = q.dim(2);
  const int64_t head_dim = width / num_heads;
  Tensor mixed({batch, nq, width});
  for (int64_t b = 0; b < batch; ++b) {
    attention({.nq = nq, .nk = nk, .heads = num_heads, .head_dim = head_dim, .q = q.data() + b * nq * width,
               .ldq = width, .k = k.data() + b * nk * width, .ldk = width, .v = v.data() + b * nk * width,
               .ldv = width, .out = mixed.data() + b * nq * width, .ldo = width,
               .scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)))});
  }
  return out_proj(mixed);
}

DecoderLayerNorm DecoderLayerNorm::load(const WeightMap& weights, const std::string& prefix) {
  return {weights.at(prefix + ".weight"), weights.at(prefix + ".bias")};
}

Tensor DecoderLayerNorm::operator()(const Tensor& x) const {
  return layer_norm(x, weight, bias, kTransformerLayerNormEps);
}

TwoWayTransformer::TwoWayTransformer(const ModelConfig& config, const WeightMap& weights, const std::string& prefix) {
  const int heads = config.decoder_num_heads;
  for (int i = 0; i < config.decoder_depth; ++i) {
    const std::string l = prefix + ".layers." + std::to_string(i);
    TwoWayAttentionBlock block;
    block.self_attn = DecoderAttention::load(weights, l + ".self_attn", heads);
    block.cross_attn_token_to_image = DecoderAttention::load(weights, l + ".cross_attn_token_to_image", heads);
    block.cross_attn_image_to_token = DecoderAttention::load(weights, l + ".cross_attn_image_to_token", heads);
    block.norm1 = DecoderLayerNorm::load(weights, l + ".norm1");
    block.norm2 = DecoderLayerNorm::load(weights, l + ".norm2");
    block.norm3 = DecoderLayerNorm::load(weights, l + ".norm3");
    block.norm4 = DecoderLayerNorm::load(weights, l + ".norm4");
    block.mlp = DecoderMlp::load(weights, l + ".mlp", 2);
    block.skip_first_layer_pe = (i == 0);
    layers_.push_back(std::move(block));
  }
  final_attn_token_to_image_ = DecoderAttention::load(weights, prefix + ".final_attn_token_to_image", heads);
  norm_final_attn_ = DecoderLayerNorm::load(weights, prefix + ".norm_final_attn");
}

std::pair<Tensor, Tensor> TwoWayTransformer::forward(const Tensor& tokens, const Tensor& image,
                                                     const Tensor& image_pe) const {
  const Tensor& query_pe = tokens;
  Tensor queries = tokens;
  Tensor keys = image;
  for (const TwoWayAttentionBlock& block : layers_) {
    // The first block's self-attention sees no position encoding and replaces the
    // tokens instead of adding to them (official TwoWayAttentionBlock).
    if (block.skip_first_layer_pe) {
      queries = block.self_attn(queries, queries, queries);
    } else {
      const Tensor q = add(queries, query_pe);
      queries = add(queries, block.self_attn(q, q, queries));
    }
    queries = block.norm1(queries);

    Tensor q = add(queries, query_pe);
    Tensor k = add_position(keys, image_pe);
    queries = block.norm2(add(queries, block.cross_attn_token_to_image(q, k, keys)));

    queries = block.norm3(add(queries, block.mlp(queries)));

    q = add(queries, query_pe);
    k = add_position(keys, image_pe);
    keys = block.norm4(add(keys, block.cross_attn_image_to_token(k, q, queries)));
  }
  const Tensor q = add(queries, query_pe);
  const Tensor k = add_position(keys, image_pe);
  queries = norm_final_attn_(add(queries, final_attn_token_to_image_(q, k, keys)));
  return {queries, keys};
}

}  // namespace sam2rt
