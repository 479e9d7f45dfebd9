#include "model/two_way_weights.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "kernels/attention.h"
#include "kernels/buffer_pool.h"
#include "kernels/decoder_rows.h"
#include "kernels/decoder/threads.h"
#include "kernels/norm.h"

namespace sam2rt {

namespace {

constexpr float kTransformerLayerNormEps = 1e-5f;
// Image rows per block of a row-parallel pass: enough for efficient GEMMs, small
// enough to stay in cache and to balance two busy cores.
constexpr int64_t kImageRowBlock = 256;

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
  const int64_t nq = q.dim(0), nk = k.dim(0), width = internal_dim(), head_dim = width / num_heads;
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)));
  std::vector<float> mixed(static_cast<size_t>(nq * width));
  for (int64_t h = 0; h < num_heads; ++h) {
    const int64_t column = h * head_dim;
    attention_serial({.nq = nq, .nk = nk, .heads = 1, .head_dim = head_dim, .q = q.data() + column, .ldq = width,
                      .k = k.data() + column, .ldk = width, .v = v.data() + column, .ldv = width,
                      .out = mixed.data() + column, .ldo = width, .scale = scale});
  }
  Tensor out({nq, out_proj.out_features()});
  out_proj.apply(mixed.data(), nq, out.data());
  return out;
}

DecoderLayerNorm DecoderLayerNorm::load(const WeightMap& weights, const std::string& prefix) {
  return {weights.at(prefix + ".weight"), weights.at(prefix + ".bias")};
}

Tensor DecoderLayerNorm::operator()(const Tensor& x) const {
  return layer_norm(x, weight, bias, kTransformerLayerNormEps);
}

TwoWayTransformerWeights::TwoWayTransformerWeights(const ModelConfig& config, const WeightMap& weights,
                                                   const std::string& prefix) {
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
  if (layers_.empty()) throw Error("model config '" + config.name + "': decoder_depth must be at least 1");
  final_attn_token_to_image_ = DecoderAttention::load(weights, prefix + ".final_attn_token_to_image", heads);
  norm_final_attn_ = DecoderLayerNorm::load(weights, prefix + ".norm_final_attn");
}

TransformerImageInput TwoWayTransformerWeights::prepare_image(Tensor src, const Tensor& image_pe, int threads) const {
  const TwoWayAttentionBlock& first = layers_.front();
  const int64_t hw = src.dim(0), c = src.dim(1);
  // Every row is written below; the memory is the pool's (the encoder's freed
  // activations), not fresh pages.
  BufferPool& pool = BufferPool::shared();
  TransformerImageInput image{.src = std::move(src),
                              .token_to_image_k = pool.tensor({hw, first.cross_attn_token_to_image.internal_dim()}),
                              .token_to_image_v = pool.tensor({hw, first.cross_attn_token_to_image.internal_dim()}),
                              .image_to_token_q = pool.tensor({hw, first.cross_attn_image_to_token.internal_dim()})};
  for_row_blocks(threads, hw, kImageRowBlock, [&](int64_t r0, int64_t r1) {
    const int64_t rows = r1 - r0;
    std::vector<float> with_pe(static_cast<size_t>(rows * c));
    add_rows(image.src.data() + r0 * c, image_pe.data() + r0 * c, rows * c, with_pe.data());
    auto at = [r0](Tensor& t) { return t.data() + r0 * t.dim(1); };
    first.cross_attn_token_to_image.k_proj.apply(with_pe.data(), rows, at(image.token_to_image_k));
    first.cross_attn_token_to_image.v_proj.apply(image.src.data() + r0 * c, rows, at(image.token_to_image_v));
    first.cross_attn_image_to_token.q_proj.apply(with_pe.data(), rows, at(image.image_to_token_q));
  });
  return image;
}

}  // namespace sam2rt
