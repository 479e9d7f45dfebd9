#include "model/low_rank_two_way.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>
#include <vector>

#include "kernels/buffer_pool.h"
#include "kernels/decoder/column_softmax_blocks.h"
#include "kernels/decoder/head_products.h"
#include "kernels/decoder_rows.h"
#include "kernels/decoder/threads.h"
#include "kernels/decoder/few_vector_dots.h"
#include "kernels/gemm.h"
#include "kernels/decoder/small_rows_linear.h"
#include "kernels/softmax.h"
#include "kernels/stage_profile.h"
#include "kernels/decoder/thread_scratch.h"

namespace sam2rt {

namespace {

// DecoderLayerNorm's eps (torch's default, as in the official TwoWayTransformer).
constexpr float kLayerNormEps = 1e-5f;
// Image rows per block of a row-parallel pass, as in TwoWayTransformer.
constexpr int64_t kImageRowBlock = 256;

// Image-sized buffers (per prompt ~10 MB for Tiny, and the per-image state) come
// from the process's pool: fresh memory costs a page fault per 4 KiB on first
// touch, which on these machines costs more than the arithmetic done on it.
Tensor image_sized(Shape shape) { return BufferPool::shared().tensor(std::move(shape)); }

Tensor add(const Tensor& a, const Tensor& b) {
  Tensor y = Tensor::uninitialized(a.shape());
  add_rows(a.data(), b.data(), a.numel(), y.data());
  return y;
}

// The rows `which` of t [T, C], in that order: [which.size(), C].
Tensor gather_rows(const Tensor& t, const std::vector<int64_t>& which) {
  const int64_t c = t.dim(1);
  Tensor out = Tensor::uninitialized({static_cast<int64_t>(which.size()), c});
  for (size_t i = 0; i < which.size(); ++i) std::copy_n(t.data() + which[i] * c, c, out.data() + static_cast<int64_t>(i) * c);
  return out;
}

float inverse_std(double sum_of_squares, int64_t c) {
  return static_cast<float>(1.0 / std::sqrt(sum_of_squares / static_cast<double>(c) + kLayerNormEps));
}

// y[rows, out] (+)= x[rows, in] W^T for a Linear weight W [out, in], no bias.
void project(const float* x, int64_t ldx, int64_t rows, const Tensor& weight, float* y, int64_t ldy,
             bool accumulate = false) {
  gemm({.m = rows, .n = weight.dim(0), .k = weight.dim(1), .a = x, .lda = ldx, .b = weight.data(),
        .ldb = weight.dim(1), .b_transposed = true, .c = y, .ldc = ldy, .accumulate = accumulate});
}

// y[rows, D] = x[rows, C] Wo for an out projection weight Wo [C, D]: the image
// rows seen through each head's output columns.
void through_out_proj(const float* x, int64_t rows, const Tensor& out_weight, float* y) {
  gemm({.m = rows, .n = out_weight.dim(1), .k = out_weight.dim(0), .a = x, .lda = out_weight.dim(0),
        .b = out_weight.data(), .ldb = out_weight.dim(1), .b_transposed = false, .c = y, .ldc = out_weight.dim(1)});
}

// [T, heads * head_dim] -> [heads * T, head_dim] (head h's rows first), times scale.
Tensor split_heads(const Tensor& v, int64_t heads, float scale) {
  const int64_t t = v.dim(0), width = v.dim(1), head_dim = width / heads;
  Tensor out = Tensor::uninitialized({heads * t, head_dim});
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t j = 0; j < t; ++j)
      for (int64_t d = 0; d < head_dim; ++d) out[(h * t + j) * head_dim + d] = scale * v[j * width + h * head_dim + d];
  return out;
}

// Row (h, j) = v_{j,h} Wo_h^T: what token j's value adds to an image row through
// head h of the out projection (weight [C, D]); [heads * T, C].
Tensor head_value_rows(const Tensor& v, const Tensor& out_weight, int64_t heads) {
  const int64_t t = v.dim(0), width = v.dim(1), head_dim = width / heads, c = out_weight.dim(0);
  Tensor rows = Tensor::uninitialized({heads * t, c});
  for (int64_t h = 0; h < heads; ++h) {
    gemm({.m = t, .n = c, .k = head_dim, .a = v.data() + h * head_dim, .lda = width,
          .b = out_weight.data() + h * head_dim, .ldb = width, .b_transposed = true,
          .c = rows.data() + h * t * c, .ldc = c});
  }
  return rows;
}

// b b^T for b [R, C].
Tensor gram(const Tensor& b) {
  const int64_t r = b.dim(0), c = b.dim(1);
  Tensor g = Tensor::uninitialized({r, r});
  gemm({.m = r, .n = r, .k = c, .a = b.data(), .lda = c, .b = b.data(), .ldb = c, .b_transposed = true, .c = g.data(),
        .ldc = r});
  return g;
}

// b [R, C] with column j times g[j].
Tensor columns_scaled(const Tensor& b, const Tensor& g) {
  const int64_t r = b.dim(0), c = b.dim(1);
  Tensor out = Tensor::uninitialized({r, c});
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) out[i * c + j] = b[i * c + j] * g[j];
  return out;
}

// Each (head, token) row of split [heads * T, head_dim] (split_heads' layout)
// seen through its head's rows of a Linear weight [D, C]: row (h, j) =
// split_{h,j} W_h, [heads * T, C]. A prompt's few tokens are multiplied into
// the weight rather than its R basis rows: heads * T * head_dim * C
// multiply-adds (then heads * T * R * C for the dots with the basis) against
// R * C * D, a quarter to a half of the work for R of 64-129 and T of 1-8.
Tensor through_heads(const Tensor& split, const Tensor& weight, int64_t heads) {
  const int64_t pairs = split.dim(0), t = pairs / heads, head_dim = split.dim(1), c = weight.dim(1);
  Tensor out = Tensor::uninitialized({pairs, c});
  for (int64_t h = 0; h < heads; ++h) {
    gemm({.m = t, .n = c, .k = head_dim, .a = split.data() + h * t * head_dim, .lda = head_dim,
          .b = weight.data() + h * head_dim * c, .ldb = c, .b_transposed = false, .c = out.data() + h * t * c,
          .ldc = c});
  }
  return out;
}

// The final attention's basis for coefficients without each head's first token
// (scale_rows_without_group_firsts): every head's probabilities sum to one, so
// its first token's row enters as a constant plus the other tokens' differences
// from it. centered [R, C] holds block 0's rows, then block 1's, T per head. Rows:
// (row_{h,j} - row_{h,0}) * g2 for j >= 1; block 0's constant, sum_h row_{h,0}
// * g2 (its coefficient is a1 a2); c~ plus block 1's constant, times g2 (its
// coefficient a2): [(heads0 + heads1) (T - 1) + 2, C], 114 rows instead of 129
// for a point prompt.
Tensor final_keys_basis(const Tensor& centered, int64_t heads0, int64_t heads1, int64_t t, const Tensor& c_centered,
                        const Tensor& g2) {
  const int64_t c = centered.dim(1), kept = (heads0 + heads1) * (t - 1);
  Tensor out = Tensor::uninitialized({kept + 2, c});
  float* const constant0 = out.data() + kept * c;
  float* const constant1 = constant0 + c;
  std::fill_n(constant0, c, 0.0f);
  std::copy_n(c_centered.data(), c, constant1);
  float* row = out.data();
  for (int64_t h = 0; h < heads0 + heads1; ++h) {
    const float* const first = centered.data() + h * t * c;
    float* const constant = h < heads0 ? constant0 : constant1;
    for (int64_t k = 0; k < c; ++k) constant[k] += first[k];
    for (int64_t j = 1; j < t; ++j, row += c) {
      const float* const other = first + j * c;
      for (int64_t k = 0; k < c; ++k) row[k] = (other[k] - first[k]) * g2[k];
    }
  }
  for (int64_t k = 0; k < c; ++k) {
    constant0[k] *= g2[k];
    constant1[k] *= g2[k];
  }
  return out;
}

std::vector<double> row_dots(const float* a, int64_t lda, const float* b, int64_t ldb, int64_t rows, int64_t c) {
  std::vector<double> out(static_cast<size_t>(rows));
  dot_rows(a, lda, b, ldb, rows, c, out.data());
  return out;
}

// Rows factored as row i = row_scale_i * shared_i + coef_i . basis + (per-row or
// fixed) constants, as a token -> image attention sees them through its k/v
// projections: keys_i = row_scale_i keys_shared_i + coef_i (basis Wk^T) + keys_const_i,
// values_i = row_scale_i values_shared_i + coef_i (basis Wv^T) + values_const.
// The shared parts belong to the image; row_scale, coef and basis to a prompt.
struct SharedImageRows {
  const Tensor& keys_shared;    // [HW, D]
  const Tensor& keys_const;     // [HW, D], k_proj bias included
  const Tensor& values_shared;  // [HW, D]
  const Tensor& values_const;   // [D], v_proj bias included
};
struct PromptImageRows {
  const Tensor* row_scale;  // [HW]
  const float* coef;        // [HW, R], row stride ldc
  int64_t ldc;
  const Tensor* basis;      // [R, C]
};

// The image's side of the rows the final attention reads.
SharedImageRows final_image_rows(const LowRankImage& image) {
  return {image.final_keys_shared, image.final_keys_const, image.final_values_shared, image.final_values_const};
}

// A prompt's token -> image attention, block by block of image rows
// (kernels/column_softmax_blocks.h): per block, the columns' maxima and sums of
// exponentials, the exponentials' products with the values ([T, D]: token j's
// row holds its heads' channels) and, over factored rows, with the
// coefficients ([heads * T, R]). The probabilities of the whole image ([HW,
// heads * T], 1 MB per prompt for Tiny, written once and read three times)
// never exist; a block's scores stay in its thread's cache. Each block has its
// own slots, combined in block order: the bits do not depend on which thread
// took which block.
struct BlockPartials {
  int64_t heads = 0, tokens = 0, width = 0, coef_width = 0;
  Tensor max, sum;  // [blocks, heads * T]
  Tensor values;    // [blocks, T, D]
  Tensor coef;      // [blocks, heads * T, R], when the rows are factored

  BlockPartials(int64_t blocks, int64_t heads_, int64_t tokens_, int64_t width_, int64_t coef_width_)
      : heads(heads_), tokens(tokens_), width(width_), coef_width(coef_width_) {
    const int64_t pairs = heads * tokens;
    max = Tensor::uninitialized({blocks, pairs});
    sum = Tensor::uninitialized({blocks, pairs});
    values = image_sized({blocks, tokens * width});
    if (coef_width > 0) coef = image_sized({blocks, pairs * coef_width});
  }

  int64_t blocks() const { return max.dim(0); }

  // Block b's scores [rows, heads * T] (row stride heads * T), exponentiated in
  // place, then their products with the block's value rows (times row_scale
  // when given) and coefficient rows (when the rows are factored).
  void add_block(int64_t b, float* scores, int64_t rows, const float* row_scale, const float* values_rows,
                 const float* coef_rows, int64_t ldc) {
    const int64_t pairs = heads * tokens;
    exp_column_block(scores, rows, pairs, pairs, max.data() + b * pairs, sum.data() + b * pairs);
    float* const v = values.data() + b * tokens * width;
    std::fill_n(v, tokens * width, 0.0f);
    head_weighted_sums({.rows = rows, .heads = heads, .head_dim = width / heads, .per_head = tokens, .w = scores,
                        .ldw = pairs, .row_scale = row_scale, .x = values_rows, .ldx = width, .out = v,
                        .ldo = width});
    if (coef_width > 0) {
      gemm({.m = pairs, .n = coef_width, .k = rows, .a = scores, .lda = pairs, .b = coef_rows, .ldb = ldc,
            .b_transposed = false, .a_transposed = true, .c = coef.data() + b * pairs * coef_width,
            .ldc = coef_width});
    }
  }

  // mixed [T, D] += the probability-weighted values; with_coef [heads * T, R] =
  // the probability-weighted coefficients (when the rows are factored).
  void combine(float* mixed, float* with_coef) const {
    const int64_t pairs = heads * tokens, head_dim = width / heads;
    std::vector<float> scale(static_cast<size_t>(blocks() * pairs));
    column_block_scales(max.data(), sum.data(), blocks(), pairs, scale.data());
    if (coef_width > 0) std::fill_n(with_coef, pairs * coef_width, 0.0f);
    for (int64_t b = 0; b < blocks(); ++b) {
      const float* const block_scale = scale.data() + b * pairs;
      const float* const v = values.data() + b * tokens * width;
      for (int64_t j = 0; j < tokens; ++j)
        for (int64_t h = 0; h < heads; ++h) {
          const float s = block_scale[h * tokens + j];
          const int64_t at = j * width + h * head_dim;
          for (int64_t d = 0; d < head_dim; ++d) mixed[at + d] += s * v[at + d];
        }
      if (coef_width == 0) continue;
      const float* const c = coef.data() + b * pairs * coef_width;
      for (int64_t k = 0; k < pairs; ++k)
        for (int64_t m = 0; m < coef_width; ++m) {
          with_coef[k * coef_width + m] += block_scale[k] * c[k * coef_width + m];
        }
    }
  }
};

int64_t image_row_blocks(int64_t n) { return (n + kImageRowBlock - 1) / kImageRowBlock; }

// attn (a token -> image attention) of each prompt's queries q_in[g] [T_g, C]
// over such rows, without forming its [HW, D] keys and values, fed one block of
// one prompt's image rows at a time (add_block): the pass that makes a block's
// rows can attend to them while they are in cache. The scores of a row are
// per-head products of its shared and constant keys with the queries plus its
// coef times the queries' dots with the basis keys; the softmax runs down the
// image rows, block by block (BlockPartials). The mixed values are the
// probabilities times row_scale times the shared values, plus (probabilities
// times coef) times the basis values, plus the constant (each column of
// probabilities sums to 1). Every prompt's rounding is that of a group of one,
// whatever the number of threads and whichever pass feeds the blocks.
class FactoredRowsAttention {
 public:
  FactoredRowsAttention(const DecoderAttention& attn, const std::vector<Tensor>& q_in, const SharedImageRows& x,
                        std::vector<PromptImageRows> prompts)
      : attn_(attn), x_(x), prompts_(std::move(prompts)) {
    const int64_t n = x.keys_shared.dim(0), width = attn.internal_dim(), heads = attn.num_heads;
    const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(width / heads)));
    for (size_t g = 0; g < q_in.size(); ++g) {
      const int64_t t = q_in[g].dim(0), pairs = heads * t, r = prompts_[g].basis->dim(0);
      const int64_t c = prompts_[g].basis->dim(1);
      queries_.push_back(split_heads(attn.q_proj(q_in[g]), heads, scale));
      // The queries' dots with the basis rows' keys: (q_h Wk_h) . basis_r.
      const Tensor queries_in_c = through_heads(queries_.back(), attn.k_proj.weight, heads);
      basis_scores_.push_back(Tensor::uninitialized({pairs, r}));
      gemm({.m = pairs, .n = r, .k = c, .a = queries_in_c.data(), .lda = c, .b = prompts_[g].basis->data(),
            .ldb = c, .b_transposed = true, .c = basis_scores_.back().data(), .ldc = r});
      partials_.emplace_back(image_row_blocks(n), heads, t, width, r);
    }
  }

  // Prompt g's image rows [r0, r1), r0 a multiple of kImageRowBlock, once their
  // row_scale and coef are written. Distinct blocks may run on distinct
  // threads; uses the calling thread's scratch slots 0 and 1.
  void add_block(size_t g, int64_t r0, int64_t r1) {
    const int64_t rows = r1 - r0, width = attn_.internal_dim(), heads = attn_.num_heads;
    const int64_t pairs = basis_scores_[g].dim(0), r = basis_scores_[g].dim(1), ldc = prompts_[g].ldc;
    float* const keys = thread_scratch(0, rows * width);
    float* const scores = thread_scratch(1, rows * pairs);
    scale_rows_add(prompts_[g].row_scale->data() + r0, x_.keys_shared.data() + r0 * width, width,
                   x_.keys_const.data() + r0 * width, width, rows, width, keys, width);
    head_dots({.rows = rows, .heads = heads, .head_dim = width / heads, .per_head = pairs / heads, .x = keys,
               .ldx = width, .vectors = queries_[g].data(), .out = scores, .ldo = pairs});
    if (pairs <= kMaxFewVectors) {
      few_vector_dots({.rows = rows, .k = r, .count = pairs, .x = prompts_[g].coef + r0 * ldc, .ldx = ldc,
                       .vectors = basis_scores_[g].data(), .out = scores, .ldo = pairs, .accumulate = true});
    } else {
      gemm({.m = rows, .n = pairs, .k = r, .a = prompts_[g].coef + r0 * ldc, .lda = ldc,
            .b = basis_scores_[g].data(), .ldb = r, .b_transposed = true, .c = scores, .ldc = pairs,
            .accumulate = true});
    }
    partials_[g].add_block(r0 / kImageRowBlock, scores, rows, prompts_[g].row_scale->data() + r0,
                           x_.values_shared.data() + r0 * width, prompts_[g].coef + r0 * ldc, ldc);
  }

  // Each prompt's output [T_g, C] (out_proj applied), once every block is added.
  std::vector<Tensor> finish() const {
    const int64_t width = attn_.internal_dim(), heads = attn_.num_heads, head_dim = width / heads;
    std::vector<Tensor> out(queries_.size());
    for (size_t g = 0; g < queries_.size(); ++g) {
      const int64_t pairs = basis_scores_[g].dim(0), r = basis_scores_[g].dim(1), t = pairs / heads;
      const int64_t c = prompts_[g].basis->dim(1);
      Tensor mixed = Tensor::uninitialized({t, width});
      for (int64_t j = 0; j < t; ++j) std::copy_n(x_.values_const.data(), width, mixed.data() + j * width);
      Tensor with_coef = Tensor::uninitialized({pairs, r});
      partials_[g].combine(mixed.data(), with_coef.data());
      // The basis part of the mixed values, (with_coef basis) Wv_h^T per head: the
      // few (head, query) rows go through the basis, not the R basis rows through Wv.
      Tensor coef_in_c = Tensor::uninitialized({pairs, c});
      gemm({.m = pairs, .n = c, .k = r, .a = with_coef.data(), .lda = r, .b = prompts_[g].basis->data(), .ldb = c,
            .b_transposed = false, .c = coef_in_c.data(), .ldc = c});
      for (int64_t h = 0; h < heads; ++h) {
        gemm({.m = t, .n = head_dim, .k = c, .a = coef_in_c.data() + h * t * c, .lda = c,
              .b = attn_.v_proj.weight.data() + h * head_dim * c, .ldb = c, .b_transposed = true,
              .c = mixed.data() + h * head_dim, .ldc = width, .accumulate = true});
      }
      out[g] = Tensor({t, attn_.out_proj.out_features()});
      attn_.out_proj.apply(mixed.data(), t, out[g].data());
    }
    return out;
  }

 private:
  const DecoderAttention& attn_;
  SharedImageRows x_;
  std::vector<PromptImageRows> prompts_;
  std::vector<Tensor> queries_;       // per prompt [heads * T, head_dim], scaled
  std::vector<Tensor> basis_scores_;  // per prompt [heads * T, R]
  std::vector<BlockPartials> partials_;
};

// The final attention and norm of the rows token_rows of each prompt's tokens
// over its image rows (LowRankTwoWayTransformer::Output), the attention fed
// block by block: by a pass of its own (final_tokens) or by the pass that makes
// the rows (forward's finish_rows).
struct FinalTokens {
  std::vector<Tensor> queries;  // each prompt's rows token_rows [rows, C]: the norm's residual
  FactoredRowsAttention attention;

  // Each prompt's tokens after the attention and the final norm [rows, C].
  std::vector<Tensor> finish(const DecoderLayerNorm& norm) const {
    const std::vector<Tensor> attn_out = attention.finish();
    std::vector<Tensor> out(queries.size());
    for (size_t g = 0; g < queries.size(); ++g) out[g] = norm(add(queries[g], attn_out[g]));
    return out;
  }
};

FinalTokens final_tokens_attention(const DecoderAttention& attn,
                                   const std::vector<const LowRankTwoWayTransformer::Output*>& prompts,
                                   const std::vector<int64_t>& token_rows, const LowRankImage& image) {
  std::vector<Tensor> queries(prompts.size()), q(prompts.size());
  std::vector<PromptImageRows> rows(prompts.size());
  for (size_t g = 0; g < prompts.size(); ++g) {
    const LowRankTwoWayTransformer::Output& p = *prompts[g];
    queries[g] = gather_rows(p.queries, token_rows);
    q[g] = add(queries[g], gather_rows(p.query_pe, token_rows));
    rows[g] = {&p.keys.row_scale, p.keys.coef.data(), p.keys.coef.dim(1), &p.keys.basis};
  }
  return {std::move(queries), FactoredRowsAttention(attn, q, final_image_rows(image), std::move(rows))};
}

// attn of each prompt's queries q[g] [T_g, D] (projected) over image rows whose
// keys and values are projected already ([HW, D] each): the softmax block by
// block as in FactoredRowsAttention, the prompts taking turns within each block
// of rows. Returns each prompt's output [T_g, C] (out_proj applied).
std::vector<Tensor> attend_projected_rows(const DecoderAttention& attn, const std::vector<Tensor>& q,
                                         const Tensor& keys, const Tensor& values, int threads) {
  const size_t count = q.size();
  const int64_t n = keys.dim(0), width = attn.internal_dim();
  const int64_t heads = attn.num_heads, head_dim = width / heads;
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)));
  std::vector<Tensor> queries(count);
  std::vector<BlockPartials> partials;
  for (size_t g = 0; g < count; ++g) {
    queries[g] = split_heads(q[g], heads, scale);
    partials.emplace_back(image_row_blocks(n), heads, q[g].dim(0), width, 0);
  }
  for_row_blocks(threads, n, kImageRowBlock, [&](int64_t r0, int64_t r1) {
    const int64_t rows = r1 - r0;
    for (size_t g = 0; g < count; ++g) {
      const int64_t pairs = queries[g].dim(0);
      float* const scores = thread_scratch(1, rows * pairs);
      head_dots({.rows = rows, .heads = heads, .head_dim = head_dim, .per_head = pairs / heads,
                 .x = keys.data() + r0 * width, .ldx = width, .vectors = queries[g].data(), .out = scores,
                 .ldo = pairs});
      partials[g].add_block(r0 / kImageRowBlock, scores, rows, nullptr, values.data() + r0 * width, nullptr, 0);
    }
  });
  std::vector<Tensor> out(count);
  for (size_t g = 0; g < count; ++g) {
    Tensor mixed({q[g].dim(0), width});
    partials[g].combine(mixed.data(), nullptr);
    out[g] = Tensor({q[g].dim(0), attn.out_proj.out_features()});
    attn.out_proj.apply(mixed.data(), q[g].dim(0), out[g].data());
  }
  return out;
}

// A block's token MLP and norm3 on every prompt's tokens (queries[g] += mlp,
// then norm3). Where the small-rows kernel takes all of them at once, their rows
// are stacked so that the MLP's weights (4 MB for Tiny) are read once per group;
// each row's arithmetic is the same either way.
void add_token_mlp(const TwoWayAttentionBlock& block, std::vector<Tensor>& queries, int threads) {
  int64_t rows = 0;
  for (const Tensor& q : queries) rows += q.dim(0);
  if (queries.size() == 1 || !small_rows_linear_applies(rows)) {
    for (Tensor& q : queries) q = block.norm3(add(q, block.mlp(q, threads)));
    return;
  }
  const int64_t c = queries.front().dim(1);
  Tensor stacked = Tensor::uninitialized({rows, c});
  int64_t row = 0;
  for (const Tensor& q : queries) {
    std::copy_n(q.data(), q.numel(), stacked.data() + row * c);
    row += q.dim(0);
  }
  const Tensor mlp_out = block.mlp(stacked, threads);
  row = 0;
  for (Tensor& q : queries) {
    q = block.norm3(add(q, mlp_out.rows(row, q.dim(0))));
    row += q.dim(0);
  }
}

}  // namespace

LowRankTwoWayTransformer::LowRankTwoWayTransformer(const TwoWayTransformer& transformer)
    : first_(transformer.layers().at(0)),
      second_(transformer.layers().at(1)),
      final_attn_(transformer.final_attention()),
      final_norm_(transformer.final_norm()) {}

LowRankImage LowRankTwoWayTransformer::prepare_image(const TransformerImageInput& input, const Tensor& image_pe,
                                                     int threads) const {
  const DecoderAttention& image_to_token0 = first_.cross_attn_image_to_token;
  const DecoderAttention& token_to_image1 = second_.cross_attn_token_to_image;
  const DecoderAttention& image_to_token1 = second_.cross_attn_image_to_token;
  const Tensor &g1 = first_.norm4.weight, &b1 = first_.norm4.bias, &g2 = second_.norm4.weight;
  const Tensor& b2 = second_.norm4.bias;
  const Tensor& out0 = image_to_token0.out_proj.weight;
  const Tensor& out2 = image_to_token1.out_proj.weight;
  const int64_t n = input.src.dim(0), c = input.src.dim(1);
  const int64_t d_out0 = out0.dim(1), d_out2 = out2.dim(1);
  const int64_t d_k1 = token_to_image1.internal_dim(), d_q2 = image_to_token1.internal_dim();
  const int64_t d_final = final_attn_.internal_dim();

  LowRankImage im;
  im.c_centered = Tensor::uninitialized({c});
  for (int64_t j = 0; j < c; ++j) im.c_centered[j] = b1[j] + image_to_token1.out_proj.bias[j];
  center_rows(im.c_centered.data(), 1, c);
  im.c_norm2 = row_dots(im.c_centered.data(), c, im.c_centered.data(), c, 1, c)[0];
  im.values1_const = token_to_image1.v_proj(b1.reshaped({1, c})).reshaped({d_k1});
  im.final_values_const = final_attn_.v_proj(b2.reshaped({1, c})).reshaped({d_final});
  // The image-sized state comes from the process's pool: memory the encoder
  // has just given back, not fresh pages.
  auto rows_of = [n](int64_t width) { return image_sized({n, width}); };
  im.src_norm2 = Tensor::uninitialized({n});
  im.src_out0 = rows_of(d_out0);
  im.keys1_shared = rows_of(d_k1);
  im.keys1_const = rows_of(d_k1);
  im.values1_shared = rows_of(d_k1);
  im.queries2_shared = rows_of(d_q2);
  im.queries2_const = rows_of(d_q2);
  im.s_norm2 = Tensor::uninitialized({n});
  im.s_dot_g1 = Tensor::uninitialized({n});
  im.s_dot_c = Tensor::uninitialized({n});
  im.s_g1_out0 = rows_of(d_out0);
  im.s_out2 = rows_of(d_out2);
  im.final_shared = rows_of(c);
  im.final_keys_shared = rows_of(d_final);
  im.final_keys_const = rows_of(d_final);
  im.final_values_shared = rows_of(d_final);

  for_row_blocks(threads, n, kImageRowBlock, [&](int64_t r0, int64_t r1) {
    const int64_t rows = r1 - r0;
    auto at = [r0](Tensor& t) { return t.data() + r0 * (t.rank() == 1 ? 1 : t.dim(1)); };
    auto store = [rows](const std::vector<double>& v, float* out) {
      for (int64_t r = 0; r < rows; ++r) out[r] = static_cast<float>(v[static_cast<size_t>(r)]);
    };
    std::vector<float> centered(static_cast<size_t>(rows * c)), s(static_cast<size_t>(rows * c)),
        work(static_cast<size_t>(rows * c));
    // S~ and block 0's statistics.
    const float* src = input.src.data() + r0 * c;
    const float* pe = image_pe.data() + r0 * c;
    const float* out_bias0 = image_to_token0.out_proj.bias.data();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < c; ++j) centered[r * c + j] = src[r * c + j] + out_bias0[j];
    center_rows(centered.data(), rows, c);
    store(row_dots(centered.data(), c, centered.data(), c, rows, c), at(im.src_norm2));
    through_out_proj(centered.data(), rows, out0, at(im.src_out0));
    // s = S~ * g1 and block 1's projections of it and of b1 + pe.
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < c; ++j) {
        s[r * c + j] = centered[r * c + j] * g1[j];
        work[r * c + j] = b1[j] + pe[r * c + j];
      }
    project(s.data(), c, rows, token_to_image1.k_proj.weight, at(im.keys1_shared), d_k1);
    project(s.data(), c, rows, token_to_image1.v_proj.weight, at(im.values1_shared), d_k1);
    project(s.data(), c, rows, image_to_token1.q_proj.weight, at(im.queries2_shared), d_q2);
    token_to_image1.k_proj.apply(work.data(), rows, at(im.keys1_const));
    image_to_token1.q_proj.apply(work.data(), rows, at(im.queries2_const));
    // s~ and block 1's statistics.
    center_rows(s.data(), rows, c);
    store(row_dots(s.data(), c, s.data(), c, rows, c), at(im.s_norm2));
    store(row_dots(s.data(), c, g1.data(), 0, rows, c), at(im.s_dot_g1));
    store(row_dots(s.data(), c, im.c_centered.data(), 0, rows, c), at(im.s_dot_c));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < c; ++j) work[r * c + j] = g1[j] * s[r * c + j];
    through_out_proj(work.data(), rows, out0, at(im.s_g1_out0));
    through_out_proj(s.data(), rows, out2, at(im.s_out2));
    // s2 = s~ * g2 and the final attention's projections of it and of b2 + pe.
    float* s2 = at(im.final_shared);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < c; ++j) {
        s2[r * c + j] = s[r * c + j] * g2[j];
        work[r * c + j] = b2[j] + pe[r * c + j];
      }
    project(s2, c, rows, final_attn_.k_proj.weight, at(im.final_keys_shared), d_final);
    project(s2, c, rows, final_attn_.v_proj.weight, at(im.final_values_shared), d_final);
    final_attn_.k_proj.apply(work.data(), rows, at(im.final_keys_const));
  });
  return im;
}

std::vector<LowRankTwoWayTransformer::Output> LowRankTwoWayTransformer::forward(
    const std::vector<Tensor>& tokens, const TransformerImageInput& input, const LowRankImage& image,
    const std::vector<int64_t>& finish_rows, int threads) const {
  const size_t count = tokens.size();
  const std::vector<Tensor>& query_pe = tokens;
  const int64_t n = input.src.dim(0), c = input.src.dim(1);
  std::vector<Tensor> queries = tokens;
  auto with_pe = [&](size_t g) { return add(queries[g], query_pe[g]); };

  // Block 0's token side, as TwoWayTransformer::forward (its image side is src).
  {
    ScopedStage stage("decoder: token self-attention");
    for (Tensor& q : queries) q = first_.norm1(first_.self_attn(q, q, q));
  }
  {
    ScopedStage stage("decoder: token -> image attention");
    const DecoderAttention& attn = first_.cross_attn_token_to_image;
    std::vector<Tensor> q(count);
    for (size_t g = 0; g < count; ++g) q[g] = attn.q_proj(with_pe(g));
    const std::vector<Tensor> attn_out =
        attend_projected_rows(attn, q, input.token_to_image_k, input.token_to_image_v, threads);
    for (size_t g = 0; g < count; ++g) queries[g] = first_.norm2(add(queries[g], attn_out[g]));
  }
  {
    ScopedStage stage("decoder: token MLP");
    add_token_mlp(first_, queries, threads);
  }

  // Block 0's image -> token attention and norm4, factored:
  //   keys1_i = a1_i s_i + (a1_i P0_i) basis0 + b1,  basis0 = centered value rows * g1,
  // a1_i the inverse standard deviation of S~_i + P0_i centered value rows.
  const DecoderAttention& image_to_token0 = first_.cross_attn_image_to_token;
  const DecoderAttention& token_to_image1 = second_.cross_attn_token_to_image;
  const DecoderAttention& image_to_token1 = second_.cross_attn_image_to_token;
  const int64_t heads0 = image_to_token0.num_heads, width0 = image_to_token0.internal_dim();
  const int64_t head_dim0 = width0 / heads0;
  const int64_t d_q2 = image_to_token1.internal_dim();
  const int64_t heads1 = image_to_token1.num_heads, head_dim1 = d_q2 / heads1;
  // Per prompt: block 0's values split by head, its value rows, the basis of its
  // image-side update, and the row scales of the factored rows. Their
  // coefficients are written where block 1 extends them: the first heads0 * T
  // columns of each row of `coef` (below), so that no pass copies them.
  std::vector<Tensor> values0(count), value_rows0(count), basis0(count), row_scale1(count), coef(count);
  auto coef_stride = [&](size_t g) { return (heads0 + heads1) * tokens[g].dim(0); };
  const float scale0 = static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim0)));
  std::vector<Tensor> keys0(count), gram0(count);
  {
    ScopedStage stage("decoder: image -> token attention");
    for (size_t g = 0; g < count; ++g) {
      const int64_t pairs0 = heads0 * tokens[g].dim(0);
      keys0[g] = split_heads(image_to_token0.k_proj(with_pe(g)), heads0, scale0);
      const Tensor v0 = image_to_token0.v_proj(queries[g]);
      values0[g] = split_heads(v0, heads0, 1.0f);
      value_rows0[g] = head_value_rows(v0, image_to_token0.out_proj.weight, heads0);
      Tensor centered0 = value_rows0[g].clone();
      center_rows(centered0.data(), pairs0, c);
      gram0[g] = gram(centered0);
      basis0[g] = columns_scaled(centered0, first_.norm4.weight);
      row_scale1[g] = image_sized({n});
      coef[g] = image_sized({n, coef_stride(g)});
    }
  }

  // Block 1's token side: its self-attention reads the tokens block 0's image
  // -> token attention reads, and its token -> image attention the image rows
  // that attention makes, so it attends to each block of them in the pass that
  // makes it, while the block is in cache.
  {
    ScopedStage stage("decoder: token self-attention");
    for (size_t g = 0; g < count; ++g) {
      const Tensor q = with_pe(g);
      queries[g] = second_.norm1(add(queries[g], second_.self_attn(q, q, queries[g])));
    }
  }
  std::vector<PromptImageRows> rows1(count);
  std::vector<Tensor> q1(count);
  for (size_t g = 0; g < count; ++g) {
    q1[g] = with_pe(g);
    rows1[g] = {&row_scale1[g], coef[g].data(), coef_stride(g), &basis0[g]};
  }
  FactoredRowsAttention token_to_image_rows1(
      token_to_image1, q1, {image.keys1_shared, image.keys1_const, image.values1_shared, image.values1_const}, rows1);
  {
    ScopedStage stage("decoder: image -> token attention, then token -> image");
    for_row_blocks(threads, n, kImageRowBlock, [&](int64_t r0, int64_t r1) {
      const int64_t rows = r1 - r0;
      for (size_t g = 0; g < count; ++g) {
        const int64_t t = tokens[g].dim(0), pairs0 = heads0 * t, ldw = coef_stride(g);
        float* p = coef[g].data() + r0 * ldw;
        head_dots({.rows = rows, .heads = heads0, .head_dim = head_dim0, .per_head = t,
                   .x = input.image_to_token_q.data() + r0 * width0, .ldx = width0, .vectors = keys0[g].data(),
                   .out = p, .ldo = ldw});
        for (int64_t r = 0; r < rows; ++r) softmax_groups(p + r * ldw, heads0, t);
        // |S~_i + P0_i centered|^2 = |S~_i|^2 + 2 P0_i . (value rows S~_i) + P0_i G0 P0_i^T
        float* const cross = thread_scratch(0, rows * pairs0);
        float* const quad = thread_scratch(1, rows * pairs0);
        head_dots({.rows = rows, .heads = heads0, .head_dim = head_dim0, .per_head = t,
                   .x = image.src_out0.data() + r0 * width0, .ldx = width0, .vectors = values0[g].data(),
                   .out = cross, .ldo = pairs0});
        gemm({.m = rows, .n = pairs0, .k = pairs0, .a = p, .lda = ldw, .b = gram0[g].data(), .ldb = pairs0,
              .b_transposed = true, .c = quad, .ldc = pairs0});
        const std::vector<double> with_cross = row_dots(p, ldw, cross, pairs0, rows, pairs0);
        const std::vector<double> with_quad = row_dots(p, ldw, quad, pairs0, rows, pairs0);
        for (int64_t r = 0; r < rows; ++r) {
          const auto k = static_cast<size_t>(r);
          row_scale1[g][r0 + r] = inverse_std(image.src_norm2[r0 + r] + 2.0 * with_cross[k] + with_quad[k], c);
        }
        scale_rows(row_scale1[g].data() + r0, p, ldw, rows, pairs0);
        token_to_image_rows1.add_block(g, r0, r1);
      }
    });
  }
  {
    ScopedStage stage("decoder: token -> image attention");
    const std::vector<Tensor> attn_out = token_to_image_rows1.finish();
    for (size_t g = 0; g < count; ++g) queries[g] = second_.norm2(add(queries[g], attn_out[g]));
  }
  {
    ScopedStage stage("decoder: token MLP");
    add_token_mlp(second_, queries, threads);
  }

  // Block 1's image -> token attention and norm4, factored: with
  // coef_i = [a1_i P0_i, P2_i] and basis = [basis0; value rows 2] (centered: B~),
  //   pre-norm row~_i = a1_i s~_i + coef_i B~ + c~,
  //   keys2_i = a2_i row~_i * g2 + b2 = (a1 a2)_i s2_i + a2_i [coef_i, 1] [B~ * g2; c~ * g2] + b2,
  // the coefficients and basis then without each head's first token (final_keys_basis).
  const Tensor& g2 = second_.norm4.weight;
  std::vector<Tensor> row_scale2(count), final_coef(count), final_basis(count);
  const float scale1 = static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim1)));
  std::vector<Tensor> keys2(count), values2(count), gram_all(count), basis_scores2(count);
  std::vector<std::vector<double>> basis_dot_c(count), basis0_means(count);
  {
    ScopedStage stage("decoder: image -> token attention");
    for (size_t g = 0; g < count; ++g) {
      const int64_t t = tokens[g].dim(0), pairs0 = heads0 * t, pairs1 = heads1 * t;
      const int64_t r = pairs0 + pairs1;
      keys2[g] = split_heads(image_to_token1.k_proj(with_pe(g)), heads1, scale1);
      const Tensor v2 = image_to_token1.v_proj(queries[g]);
      values2[g] = split_heads(v2, heads1, 1.0f);
      const Tensor value_rows2 = head_value_rows(v2, image_to_token1.out_proj.weight, heads1);
      Tensor basis = Tensor::uninitialized({r, c});
      std::copy_n(basis0[g].data(), pairs0 * c, basis.data());
      std::copy_n(value_rows2.data(), pairs1 * c, basis.data() + pairs0 * c);
      // basis . c~ equals B~ . c~ (c~ sums to zero), likewise basis . s~_i below.
      basis_dot_c[g] = row_dots(basis.data(), c, image.c_centered.data(), 0, r, c);
      basis0_means[g].resize(static_cast<size_t>(pairs0));
      for (int64_t j = 0; j < pairs0; ++j) {
        double sum = 0;
        for (int64_t k = 0; k < c; ++k) sum += value_rows0[g][j * c + k];
        basis0_means[g][static_cast<size_t>(j)] = sum / static_cast<double>(c);
      }
      center_rows(basis.data(), r, c);
      gram_all[g] = gram(basis);
      // The quadratic form below reads the lower-left block (block 1's rows
      // against block 0's) for both cross terms: doubled here (exactly).
      for (int64_t i = pairs0; i < r; ++i)
        for (int64_t j = 0; j < pairs0; ++j) gram_all[g][i * r + j] *= 2.0f;
      final_basis[g] = final_keys_basis(basis, heads0, heads1, t, image.c_centered, g2);
      final_coef[g] = image_sized({n, final_basis[g].dim(0)});
      // The queries' part from block 0's update, (a1 P0) (basis0 Wq^T), enters
      // the scores as (a1 P0) times basis0's queries' dots with the keys,
      // basis0 . (k_h Wq_h): [pairs0, pairs1] per prompt instead of a [HW, D] product.
      const Tensor keys_in_c = through_heads(keys2[g], image_to_token1.q_proj.weight, heads1);
      basis_scores2[g] = Tensor::uninitialized({pairs0, pairs1});
      gemm({.m = pairs0, .n = pairs1, .k = c, .a = basis0[g].data(), .lda = c, .b = keys_in_c.data(), .ldb = c,
            .b_transposed = true, .c = basis_scores2[g].data(), .ldc = pairs1});
      row_scale2[g] = image_sized({n});
    }
  }
  // The outputs, their rows written by the pass below (the tensors share storage).
  std::vector<Output> out(count);
  std::vector<const Output*> outputs(count);
  for (size_t g = 0; g < count; ++g) {
    out[g] = {queries[g], tokens[g], {row_scale2[g], final_coef[g], final_basis[g], second_.norm4.bias}, {}};
    outputs[g] = &out[g];
  }
  // The final attention of the rows finish_rows attends to each block of the
  // image rows in the pass that makes it, while the block is in cache.
  std::optional<FinalTokens> finishing;
  if (!finish_rows.empty()) finishing.emplace(final_tokens_attention(final_attn_, outputs, finish_rows, image));
  {
    ScopedStage stage(finish_rows.empty() ? "decoder: image -> token attention"
                                          : "decoder: image -> token attention, then token -> image");
    for_row_blocks(threads, n, kImageRowBlock, [&](int64_t r0, int64_t r1) {
      const int64_t rows = r1 - r0;
      for (size_t g = 0; g < count; ++g) {
        const int64_t t = tokens[g].dim(0), pairs0 = heads0 * t, pairs1 = heads1 * t;
        const int64_t r = pairs0 + pairs1, ldw = r, ldf = final_coef[g].dim(1);
        // Block 0's coefficients a1 P0 are the first pairs0 columns of w; block
        // 1's probabilities P2 go beside them.
        float* const w = coef[g].data() + r0 * ldw;
        float* const p2 = w + pairs0;
        // Block 1's image -> token scores: the queries without block 0's update
        // (a1 times the shared queries plus the constant) against the keys,
        // plus a1 P0 times basis_scores2; then the softmax.
        float* const q2 = thread_scratch(2, rows * d_q2);
        float* const a2s = thread_scratch(3, rows);
        scale_rows_add(row_scale1[g].data() + r0, image.queries2_shared.data() + r0 * d_q2, d_q2,
                       image.queries2_const.data() + r0 * d_q2, d_q2, rows, d_q2, q2, d_q2);
        head_dots({.rows = rows, .heads = heads1, .head_dim = head_dim1, .per_head = t, .x = q2, .ldx = d_q2,
                   .vectors = keys2[g].data(), .out = p2, .ldo = ldw});
        gemm({.m = rows, .n = pairs1, .k = pairs0, .a = w, .lda = ldw, .b = basis_scores2[g].data(), .ldb = pairs1,
              .b_transposed = false, .c = p2, .ldc = ldw, .accumulate = true});
        for (int64_t i = 0; i < rows; ++i) softmax_groups(p2 + i * ldw, heads1, t);
        // basis . s~_i: value rows 0 through (g1 s~) Wo0 less their means times
        // g1 . s~_i (subtracted from the row's dot with w below), value rows 2
        // through s~ Wo2.
        float* const cross = thread_scratch(0, rows * r);
        float* const quad = thread_scratch(1, rows * r);
        head_dots({.rows = rows, .heads = heads0, .head_dim = head_dim0, .per_head = t,
                   .x = image.s_g1_out0.data() + r0 * width0, .ldx = width0, .vectors = values0[g].data(),
                   .out = cross, .ldo = r});
        head_dots({.rows = rows, .heads = heads1, .head_dim = head_dim1, .per_head = t,
                   .x = image.s_out2.data() + r0 * d_q2, .ldx = d_q2, .vectors = values2[g].data(),
                   .out = cross + pairs0, .ldo = r});
        // w G w^T with G = [G00 G02; G20 G22] symmetric, w = [w0 w2]: w0 . (w0 G00 + 2 w2 G20) + w2 . (w2 G22),
        // three quarters of the products of w G.
        const float* const gram = gram_all[g].data();
        gemm({.m = rows, .n = pairs0, .k = pairs0, .a = w, .lda = ldw, .b = gram, .ldb = r, .b_transposed = true,
              .c = quad, .ldc = r});
        gemm({.m = rows, .n = pairs0, .k = pairs1, .a = p2, .lda = ldw, .b = gram + pairs0 * r, .ldb = r,
              .b_transposed = false, .c = quad, .ldc = r, .accumulate = true});
        gemm({.m = rows, .n = pairs1, .k = pairs1, .a = p2, .lda = ldw, .b = gram + pairs0 * r + pairs0, .ldb = r,
              .b_transposed = true, .c = quad + pairs0, .ldc = r});
        const std::vector<double> with_cross = row_dots(w, ldw, cross, r, rows, r);
        std::vector<double> with_c(static_cast<size_t>(rows)), with_means(static_cast<size_t>(rows));
        dot_rows_with(w, ldw, basis_dot_c[g].data(), rows, r, with_c.data());
        dot_rows_with(w, ldw, basis0_means[g].data(), rows, pairs0, with_means.data());
        const std::vector<double> with_quad = row_dots(w, ldw, quad, r, rows, r);
        for (int64_t i = 0; i < rows; ++i) {
          const auto k = static_cast<size_t>(i);
          const double a1 = row_scale1[g][r0 + i];
          const double cross_i = with_cross[k] - with_means[k] * image.s_dot_g1[r0 + i];
          const double norm2 = a1 * a1 * image.s_norm2[r0 + i] + 2.0 * a1 * image.s_dot_c[r0 + i] + image.c_norm2 +
                               2.0 * a1 * cross_i + 2.0 * with_c[k] + with_quad[k];
          const float a2 = inverse_std(norm2, c);
          row_scale2[g][r0 + i] = static_cast<float>(a1) * a2;
          a2s[i] = a2;
        }
        float* const f = final_coef[g].data() + r0 * ldf;
        scale_rows_without_group_firsts(a2s, w, ldw, rows, heads0 + heads1, t, f, ldf);
        for (int64_t i = 0; i < rows; ++i) {
          f[i * ldf + ldf - 2] = row_scale2[g][r0 + i];
          f[i * ldf + ldf - 1] = a2s[i];
        }
        if (finishing) finishing->attention.add_block(g, r0, r1);
      }
    });
  }

  if (finishing) {
    ScopedStage stage("decoder: final token -> image attention");
    const std::vector<Tensor> finished = finishing->finish(final_norm_);
    for (size_t g = 0; g < count; ++g) out[g].finished = finished[g];
  }
  return out;
}

std::vector<Tensor> LowRankTwoWayTransformer::final_tokens(const std::vector<const Output*>& prompts,
                                                           const std::vector<int64_t>& token_rows,
                                                           const LowRankImage& image, int threads) const {
  ScopedStage stage("decoder: final token -> image attention");
  FinalTokens rows = final_tokens_attention(final_attn_, prompts, token_rows, image);
  // A pass of its own: row blocks shared by `threads` workers, the prompts
  // taking turns within each block, which is read once for all of them.
  for_row_blocks(threads, image.final_keys_shared.dim(0), kImageRowBlock, [&](int64_t r0, int64_t r1) {
    for (size_t g = 0; g < prompts.size(); ++g) rows.attention.add_block(g, r0, r1);
  });
  return rows.finish(final_norm_);
}

}  // namespace sam2rt
