#include "model/two_way_transformer.h"

#include <cmath>
#include <vector>

#include "core/error.h"
#include "kernels/attention.h"
#include "kernels/decoder_rows.h"
#include "kernels/decoder_threads.h"
#include "kernels/norm.h"

namespace sam2rt {

namespace {

constexpr float kTransformerLayerNormEps = 1e-5f;
// Image rows per block of a row-parallel pass: enough for efficient GEMMs, small
// enough to stay in cache and to balance two busy cores.
constexpr int64_t kImageRowBlock = 256;

Tensor add(const Tensor& a, const Tensor& b) {
  Tensor y(a.shape());
  add_rows(a.data(), b.data(), a.numel(), y.data());
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

void DecoderAttention::attend_projected(const float* q, int64_t nq, const float* k, const float* v, int64_t nk,
                                        float* out) const {
  const int64_t width = internal_dim(), head_dim = width / num_heads;
  std::vector<float> mixed(static_cast<size_t>(nq * width));
  attention({.nq = nq, .nk = nk, .heads = num_heads, .head_dim = head_dim, .q = q, .ldq = width, .k = k,
             .ldk = width, .v = v, .ldv = width, .out = mixed.data(), .ldo = width,
             .scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)))});
  out_proj.apply(mixed.data(), nq, out);
}

Tensor DecoderAttention::operator()(const Tensor& q_in, const Tensor& k_in, const Tensor& v_in) const {
  const Tensor q = q_proj(q_in), k = k_proj(k_in), v = v_proj(v_in);
  Tensor out({q_in.dim(0), out_proj.out_features()});
  attend_projected(q.data(), q.dim(0), k.data(), v.data(), k.dim(0), out.data());
  return out;
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
  if (layers_.empty()) throw Error("model config '" + config.name + "': decoder_depth must be at least 1");
  final_attn_token_to_image_ = DecoderAttention::load(weights, prefix + ".final_attn_token_to_image", heads);
  norm_final_attn_ = DecoderLayerNorm::load(weights, prefix + ".norm_final_attn");
}

TransformerImageInput TwoWayTransformer::prepare_image(Tensor src, const Tensor& image_pe, int threads) const {
  const TwoWayAttentionBlock& first = layers_.front();
  const int64_t hw = src.dim(0), c = src.dim(1);
  TransformerImageInput image{.src = std::move(src),
                              .token_to_image_k = Tensor({hw, first.cross_attn_token_to_image.internal_dim()}),
                              .token_to_image_v = Tensor({hw, first.cross_attn_token_to_image.internal_dim()}),
                              .image_to_token_q = Tensor({hw, first.cross_attn_image_to_token.internal_dim()})};
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

TwoWayTransformer::Output TwoWayTransformer::forward(const Tensor& tokens, const TransformerImageInput& image,
                                                     const Tensor& image_pe, int threads) const {
  const Tensor& query_pe = tokens;
  const int64_t hw = image.src.dim(0), c = image.src.dim(1);
  Tensor queries = tokens;
  Tensor keys = image.src;  // read-only until the first block writes its own keys
  // The keys and values the current block's token->image attention sees.
  Tensor image_k = image.token_to_image_k, image_v = image.token_to_image_v;

  for (size_t layer = 0; layer < layers_.size(); ++layer) {
    const TwoWayAttentionBlock& block = layers_[layer];
    // The first block's self-attention sees no position encoding and replaces the
    // tokens instead of adding to them (official TwoWayAttentionBlock).
    if (block.skip_first_layer_pe) {
      queries = block.self_attn(queries, queries, queries);
    } else {
      const Tensor q = add(queries, query_pe);
      queries = add(queries, block.self_attn(q, q, queries));
    }
    queries = block.norm1(queries);

    {
      const DecoderAttention& attn = block.cross_attn_token_to_image;
      const Tensor q = attn.q_proj(add(queries, query_pe));
      Tensor attn_out({queries.dim(0), c});
      attn.attend_projected(q.data(), q.dim(0), image_k.data(), image_v.data(), hw, attn_out.data());
      queries = block.norm2(add(queries, attn_out));
    }
    queries = block.norm3(add(queries, block.mlp(queries)));

    // Image -> token attention updates the keys row by row; the same pass projects
    // the new keys for the next token -> image attention.
    const DecoderAttention& attn = block.cross_attn_image_to_token;
    const Tensor token_k = attn.k_proj(add(queries, query_pe));
    const Tensor token_v = attn.v_proj(queries);
    const DecoderAttention& next =
        layer + 1 < layers_.size() ? layers_[layer + 1].cross_attn_token_to_image : final_attn_token_to_image_;
    const int64_t width = attn.internal_dim(), next_width = next.internal_dim(), num_tokens = queries.dim(0);
    Tensor new_keys({hw, c}), next_k({hw, next_width}), next_v({hw, next_width});
    for_row_blocks(threads, hw, kImageRowBlock, [&](int64_t r0, int64_t r1) {
      const int64_t rows = r1 - r0;
      std::vector<float> with_pe(static_cast<size_t>(rows * c)), image_q;
      const float* q = image.image_to_token_q.data() + r0 * width;
      if (layer != 0) {
        add_rows(keys.data() + r0 * c, image_pe.data() + r0 * c, rows * c, with_pe.data());
        image_q.resize(static_cast<size_t>(rows * width));
        attn.q_proj.apply(with_pe.data(), rows, image_q.data());
        q = image_q.data();
      }
      float* updated = new_keys.data() + r0 * c;
      attn.attend_projected(q, rows, token_k.data(), token_v.data(), num_tokens, updated);
      add_layer_norm_rows(updated, keys.data() + r0 * c, rows, c, block.norm4.weight.data(), block.norm4.bias.data(),
                          kTransformerLayerNormEps);

      add_rows(updated, image_pe.data() + r0 * c, rows * c, with_pe.data());
      next.k_proj.apply(with_pe.data(), rows, next_k.data() + r0 * next_width);
      next.v_proj.apply(updated, rows, next_v.data() + r0 * next_width);
    });
    keys = new_keys;
    image_k = next_k;
    image_v = next_v;
  }

  const Tensor q = final_attn_token_to_image_.q_proj(add(queries, query_pe));
  Tensor attn_out({queries.dim(0), c});
  final_attn_token_to_image_.attend_projected(q.data(), q.dim(0), image_k.data(), image_v.data(), hw, attn_out.data());
  queries = norm_final_attn_(add(queries, attn_out));
  return {queries, keys};
}

}  // namespace sam2rt
