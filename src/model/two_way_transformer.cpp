#include "model/two_way_transformer.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "kernels/attention.h"
#include "kernels/buffer_pool.h"
#include "kernels/decoder_rows.h"
#include "kernels/decoder/threads.h"
#include "kernels/gemm.h"
#include "kernels/norm.h"
#include "kernels/softmax.h"
#include "kernels/stage_profile.h"

namespace sam2rt {

namespace {

constexpr float kTransformerLayerNormEps = 1e-5f;
// Image rows per block of a row-parallel pass: enough for efficient GEMMs, small
// enough to stay in cache and to balance two busy cores.
constexpr int64_t kImageRowBlock = 256;

Tensor add(const Tensor& a, const Tensor& b) {
  Tensor y = Tensor::uninitialized(a.shape());
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
                                        float* out, int threads) const {
  const int64_t width = internal_dim(), head_dim = width / num_heads;
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)));
  std::vector<float> mixed(static_cast<size_t>(nq * width));
  for_row_blocks(threads, num_heads, 1, [&](int64_t h0, int64_t h1) {
    for (int64_t h = h0; h < h1; ++h) {
      const int64_t column = h * head_dim;
      attention_serial({.nq = nq, .nk = nk, .heads = 1, .head_dim = head_dim, .q = q + column, .ldq = width,
                        .k = k + column, .ldk = width, .v = v + column, .ldv = width, .out = mixed.data() + column,
                        .ldo = width, .scale = scale});
    }
  });
  out_proj.apply(mixed.data(), nq, out);
}

void DecoderAttention::attend_image(const float* q, int64_t nq, const float* keys_pe, const float* values, int64_t n,
                                    float* out, int threads) const {
  const int64_t width = internal_dim(), head_dim = width / num_heads, c = k_proj.in_features();
  const int64_t pairs = nq * num_heads;  // row (h * nq + t): query t in head h
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)));
  // Folded queries: row (h, t) = scale * q_{t,h} Wk_h, a vector over the C input channels.
  std::vector<float> scaled_q(static_cast<size_t>(nq * width)), folded(static_cast<size_t>(pairs * c));
  std::transform(q, q + nq * width, scaled_q.begin(), [scale](float v) { return v * scale; });
  for (int64_t h = 0; h < num_heads; ++h) {
    gemm({.m = nq, .n = c, .k = head_dim, .a = scaled_q.data() + h * head_dim, .lda = width,
          .b = k_proj.weight.data() + h * head_dim * c, .ldb = c, .b_transposed = false,
          .c = folded.data() + h * nq * c, .ldc = c});
  }
  // Per (query, head) row: scores over the image rows, softmax, then the
  // probability-weighted sum of the value inputs.
  Tensor scores = Tensor::uninitialized({pairs, n}), mixed_inputs = Tensor::uninitialized({pairs, c});
  // Fixed blocks of (query, head) rows, whatever the thread count: same GEMM
  // shapes and rounding for a prompt decoded alone or within a batch.
  constexpr int64_t kPairBlock = 32;
  const int64_t block = kPairBlock;
  for_row_blocks(threads, pairs, block, [&](int64_t p0, int64_t p1) {
    const int64_t rows = p1 - p0;
    gemm({.m = rows, .n = n, .k = c, .a = folded.data() + p0 * c, .lda = c, .b = keys_pe, .ldb = c,
          .b_transposed = true, .c = scores.data() + p0 * n, .ldc = n});
    softmax_rows(scores.data() + p0 * n, rows, n, n);
    gemm({.m = rows, .n = c, .k = n, .a = scores.data() + p0 * n, .lda = n, .b = values, .ldb = c,
          .b_transposed = false, .c = mixed_inputs.data() + p0 * c, .ldc = c});
  });
  // v_proj of the mixed inputs, head by head, into the attention's output layout.
  std::vector<float> mixed(static_cast<size_t>(nq * width));
  for (int64_t t = 0; t < nq; ++t) std::copy_n(v_proj.bias.data(), width, mixed.data() + t * width);
  for (int64_t h = 0; h < num_heads; ++h) {
    gemm({.m = nq, .n = head_dim, .k = c, .a = mixed_inputs.data() + h * nq * c, .lda = c,
          .b = v_proj.weight.data() + h * head_dim * c, .ldb = c, .b_transposed = true,
          .c = mixed.data() + h * head_dim, .ldc = width, .accumulate = true});
  }
  out_proj.apply(mixed.data(), nq, out);
}

Tensor DecoderAttention::operator()(const Tensor& q_in, const Tensor& k_in, const Tensor& v_in) const {
  const Tensor q = q_proj(q_in), k = k_proj(k_in), v = v_proj(v_in);
  Tensor out({q_in.dim(0), out_proj.out_features()});
  attend_projected(q.data(), q.dim(0), k.data(), v.data(), k.dim(0), out.data(), 1);
  return out;
}

FoldedTokenAttention DecoderAttention::fold_tokens(const Tensor& token_k, const Tensor& token_v,
                                                  bool project_queries) const {
  const int64_t width = internal_dim(), head_dim = width / num_heads, tokens = token_k.dim(0);
  const int64_t columns = num_heads * tokens, c = out_proj.out_features();
  const int64_t in = project_queries ? q_proj.in_features() : width;
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)));
  FoldedTokenAttention f{.heads = num_heads,
                         .tokens = tokens,
                         .score_weight = Tensor({columns, in}),
                         .score_bias = Tensor({columns}),
                         .value_out = Tensor({columns, c}),
                         .out_bias = out_proj.bias};
  // Row (h, j) of score_weight: scale * k_{j,h} Wq_h (or k_{j,h} itself in head
  // h's columns when the queries come projected); of value_out: v_{j,h} Wo_h^T.
  std::vector<float> scaled_k(static_cast<size_t>(tokens * width));
  std::transform(token_k.begin(), token_k.end(), scaled_k.begin(), [scale](float v) { return v * scale; });
  for (int64_t h = 0; h < num_heads; ++h) {
    float* score_rows = f.score_weight.data() + h * tokens * in;
    const float* keys = scaled_k.data() + h * head_dim;
    if (project_queries) {
      gemm({.m = tokens, .n = in, .k = head_dim, .a = keys, .lda = width,
            .b = q_proj.weight.data() + h * head_dim * in, .ldb = in, .b_transposed = false, .c = score_rows,
            .ldc = in});
      for (int64_t j = 0; j < tokens; ++j) {
        float bias = 0.0f;
        for (int64_t d = 0; d < head_dim; ++d) bias += q_proj.bias[h * head_dim + d] * keys[j * width + d];
        f.score_bias[h * tokens + j] = bias;
      }
    } else {
      for (int64_t j = 0; j < tokens; ++j) {
        std::copy_n(keys + j * width, head_dim, score_rows + j * in + h * head_dim);
        f.score_bias[h * tokens + j] = 0.0f;
      }
    }
    gemm({.m = tokens, .n = c, .k = head_dim, .a = token_v.data() + h * head_dim, .lda = width,
          .b = out_proj.weight.data() + h * head_dim, .ldb = width, .b_transposed = true,
          .c = f.value_out.data() + h * tokens * c, .ldc = c});
  }
  return f;
}

void FoldedTokenAttention::apply(const float* x, int64_t rows, float* out) const {
  const int64_t in = score_weight.dim(1), columns = heads * tokens, c = value_out.dim(1);
  std::vector<float> scores(static_cast<size_t>(rows * columns));
  for (int64_t r = 0; r < rows; ++r) std::copy_n(score_bias.data(), columns, scores.data() + r * columns);
  gemm({.m = rows, .n = columns, .k = in, .a = x, .lda = in, .b = score_weight.data(), .ldb = in,
        .b_transposed = true, .c = scores.data(), .ldc = columns, .accumulate = true});
  softmax_groups(scores.data(), rows * heads, tokens);
  for (int64_t r = 0; r < rows; ++r) std::copy_n(out_bias.data(), c, out + r * c);
  gemm({.m = rows, .n = c, .k = columns, .a = scores.data(), .lda = columns, .b = value_out.data(), .ldb = c,
        .b_transposed = false, .c = out, .ldc = c, .accumulate = true});
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

TwoWayTransformer::Output TwoWayTransformer::forward(const Tensor& tokens, const TransformerImageInput& image,
                                                     const Tensor& image_pe, int threads) const {
  const Tensor& query_pe = tokens;
  const int64_t hw = image.src.dim(0), c = image.src.dim(1);
  Tensor queries = tokens;
  Tensor keys = image.src;  // read-only until the first block writes its own keys
  Tensor keys_pe;           // keys + image_pe, from the second block on

  // Token -> image attention: the first block's image side is projected once per
  // image; later ones fold the projections into the queries.
  auto token_to_image = [&](const DecoderAttention& attn, bool first_block) {
    const Tensor q = attn.q_proj(add(queries, query_pe));
    Tensor attn_out({queries.dim(0), c});
    if (first_block) {
      attn.attend_projected(q.data(), q.dim(0), image.token_to_image_k.data(), image.token_to_image_v.data(), hw,
                            attn_out.data(), threads);
    } else {
      attn.attend_image(q.data(), q.dim(0), keys_pe.data(), keys.data(), hw, attn_out.data(), threads);
    }
    return attn_out;
  };

  for (size_t layer = 0; layer < layers_.size(); ++layer) {
    const TwoWayAttentionBlock& block = layers_[layer];
    // The first block's self-attention sees no position encoding and replaces the
    // tokens instead of adding to them (official TwoWayAttentionBlock).
    {
      ScopedStage stage("decoder: token self-attention");
      if (block.skip_first_layer_pe) {
        queries = block.self_attn(queries, queries, queries);
      } else {
        const Tensor q = add(queries, query_pe);
        queries = add(queries, block.self_attn(q, q, queries));
      }
      queries = block.norm1(queries);
    }
    {
      ScopedStage stage("decoder: token -> image attention");
      queries = block.norm2(add(queries, token_to_image(block.cross_attn_token_to_image, layer == 0)));
    }
    {
      ScopedStage stage("decoder: token MLP");
      queries = block.norm3(add(queries, block.mlp(queries, threads)));
    }
    ScopedStage stage("decoder: image -> token attention");

    // Image -> token attention updates the keys row by row.
    const DecoderAttention& attn = block.cross_attn_image_to_token;
    const bool queries_cached = layer == 0;  // the first block's image queries come with the image
    const FoldedTokenAttention folded =
        attn.fold_tokens(attn.k_proj(add(queries, query_pe)), attn.v_proj(queries), !queries_cached);
    Tensor new_keys = Tensor::uninitialized({hw, c}), new_keys_pe = Tensor::uninitialized({hw, c});
    for_row_blocks(threads, hw, kImageRowBlock, [&](int64_t r0, int64_t r1) {
      const int64_t rows = r1 - r0;
      float* updated = new_keys.data() + r0 * c;
      float* with_pe = new_keys_pe.data() + r0 * c;
      if (queries_cached) {
        folded.apply(image.image_to_token_q.data() + r0 * attn.internal_dim(), rows, updated);
      } else {
        folded.apply(keys_pe.data() + r0 * c, rows, updated);
      }
      add_layer_norm_rows(updated, keys.data() + r0 * c, rows, c, block.norm4.weight.data(), block.norm4.bias.data(),
                          kTransformerLayerNormEps);
      add_rows(updated, image_pe.data() + r0 * c, rows * c, with_pe);
    });
    keys = new_keys;
    keys_pe = new_keys_pe;
  }

  ScopedStage stage("decoder: final token -> image attention");
  queries = norm_final_attn_(add(queries, token_to_image(final_attn_token_to_image_, false)));
  return {queries, keys};
}

}  // namespace sam2rt
