#include "model/low_rank_two_way.h"

#include <algorithm>
#include <cmath>
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
// Image rows per block of a row-parallel pass.
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


// What one prompt carries through the two blocks; the passes of TwoBlockPasses
// fill it in order. Symbols as in docs/LOW_RANK.md: P0, P2 the image -> token
// probabilities of blocks 0 and 1, a1, a2 the inverse standard deviations of
// norm4's inputs, g1, g2 the norm4 weights.
struct PromptState {
  Tensor tokens;   // as given, [T, C]: also the tokens' position encoding
  Tensor queries;  // the token rows, updated step by step [T, C]

  // Block 0's image -> token attention, from the tokens after block 0's token side.
  Tensor block0_keys;        // the tokens' keys by head, times the softmax scale [heads0 T, head_dim0]
  Tensor block0_values;      // the tokens' values by head [heads0 T, head_dim0]
  Tensor block0_value_rows;  // each (head, token) value through out_proj [heads0 T, C]
  Tensor block0_value_gram;  // the centered value rows' Gram matrix [heads0 T, heads0 T]
  Tensor block0_basis;       // the centered value rows times g1 [heads0 T, C]
  Tensor block0_row_scale;   // a1 of each image row [HW]
  // Per image row, a1 P0 (heads0 T columns) then P2 (heads1 T columns): block
  // 1's pass reads block 0's coefficients where block 0's pass wrote them.
  Tensor coef;

  // Block 1's image -> token attention, from the tokens after block 1's token side.
  Tensor block1_keys;                          // [heads1 T, head_dim1], scaled
  Tensor block1_values;                        // [heads1 T, head_dim1]
  Tensor basis_gram;                           // centered [basis0; value rows 1]'s Gram, cross block doubled
  Tensor block0_basis_scores;                  // basis0 . (k_h Wq_h) [heads0 T, heads1 T]
  std::vector<double> basis_dot_c;             // each basis row . c~
  std::vector<double> block0_value_row_means;  // each block 0 value row's mean
  Tensor final_row_scale;                      // a1 a2 [HW]
  Tensor final_coef;                           // [HW, final_basis rows]
  Tensor final_basis;                          // final_keys_basis

  int64_t token_count() const { return tokens.dim(0); }
  Tensor queries_with_pe() const { return add(queries, tokens); }
};

// LowRankTwoWayTransformer::forward as a pass per stage over every prompt's
// PromptState. The two passes over the image rows (block 0's image update,
// block 1's) each feed the attention that reads the rows they make, one block
// of rows at a time, while it is in cache.
class TwoBlockPasses {
 public:
  TwoBlockPasses(const TwoWayAttentionBlock& first, const TwoWayAttentionBlock& second,
                 const TransformerImageInput& input, const LowRankImage& image, const std::vector<Tensor>& tokens,
                 int threads)
      : first_(first),
        second_(second),
        input_(input),
        image_(image),
        threads_(threads),
        image_rows_(input.src.dim(0)),
        width_(input.src.dim(1)),
        heads0_(first.cross_attn_image_to_token.num_heads),
        heads1_(second.cross_attn_image_to_token.num_heads) {
    prompts_.resize(tokens.size());
    for (size_t g = 0; g < tokens.size(); ++g) prompts_[g].tokens = prompts_[g].queries = tokens[g];
  }

  std::vector<PromptState>& prompts() { return prompts_; }

  // Block 0's token side, as the reference (its image side is src): the
  // self-attention without position encoding, the token -> image attention
  // over src's projected keys and values, the MLP.
  void block0_token_side() {
    {
      ScopedStage stage("decoder: token self-attention");
      for (PromptState& p : prompts_) p.queries = first_.norm1(first_.self_attn(p.queries, p.queries, p.queries));
    }
    {
      ScopedStage stage("decoder: token -> image attention");
      const DecoderAttention& attn = first_.cross_attn_token_to_image;
      std::vector<Tensor> q;
      for (const PromptState& p : prompts_) q.push_back(attn.q_proj(p.queries_with_pe()));
      const std::vector<Tensor> attn_out =
          attend_projected_rows(attn, q, input_.token_to_image_k, input_.token_to_image_v, threads_);
      for (size_t g = 0; g < prompts_.size(); ++g)
        prompts_[g].queries = first_.norm2(add(prompts_[g].queries, attn_out[g]));
    }
    token_mlp(first_);
  }

  // Block 0's image -> token attention's token side: keys, values, value
  // rows and their basis; the per-row arrays its pass writes.
  void prepare_block0_image_update() {
    ScopedStage stage("decoder: image -> token attention");
    const DecoderAttention& attn = first_.cross_attn_image_to_token;
    const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(attn.internal_dim() / heads0_)));
    for (PromptState& p : prompts_) {
      const int64_t pairs0 = heads0_ * p.token_count();
      p.block0_keys = split_heads(attn.k_proj(p.queries_with_pe()), heads0_, scale);
      const Tensor values = attn.v_proj(p.queries);
      p.block0_values = split_heads(values, heads0_, 1.0f);
      p.block0_value_rows = head_value_rows(values, attn.out_proj.weight, heads0_);
      Tensor centered = p.block0_value_rows.clone();
      center_rows(centered.data(), pairs0, width_);
      p.block0_value_gram = gram(centered);
      p.block0_basis = columns_scaled(centered, first_.norm4.weight);
      p.block0_row_scale = image_sized({image_rows_});
      p.coef = image_sized({image_rows_, coef_columns(p)});
    }
  }

  // Block 1's self-attention: it reads the tokens block 0's image -> token
  // attention reads, so it runs before that attention's pass.
  void block1_self_attention() {
    ScopedStage stage("decoder: token self-attention");
    for (PromptState& p : prompts_) {
      const Tensor q = p.queries_with_pe();
      p.queries = second_.norm1(add(p.queries, second_.self_attn(q, q, p.queries)));
    }
  }

  // Block 0's image -> token attention over the image rows (P0, a1, the
  // factored rows), each block of rows then attended by block 1's token ->
  // image attention; then that attention's norm.
  void block0_image_update_then_block1_token_to_image() {
    const DecoderAttention& image_to_token = first_.cross_attn_image_to_token;
    const int64_t width0 = image_to_token.internal_dim(), head_dim0 = width0 / heads0_;
    std::vector<PromptImageRows> rows;
    std::vector<Tensor> q;
    for (PromptState& p : prompts_) {
      q.push_back(p.queries_with_pe());
      rows.push_back({&p.block0_row_scale, p.coef.data(), coef_columns(p), &p.block0_basis});
    }
    FactoredRowsAttention token_to_image(
        second_.cross_attn_token_to_image, q,
        {image_.keys1_shared, image_.keys1_const, image_.values1_shared, image_.values1_const}, rows);
    {
      ScopedStage stage("decoder: image -> token attention, then token -> image");
      for_row_blocks(threads_, image_rows_, kImageRowBlock, [&](int64_t r0, int64_t r1) {
        const int64_t block_rows = r1 - r0;
        for (size_t g = 0; g < prompts_.size(); ++g) {
          PromptState& s = prompts_[g];
          const int64_t t = s.token_count(), pairs0 = heads0_ * t, ldw = coef_columns(s);
          float* p = s.coef.data() + r0 * ldw;
          head_dots({.rows = block_rows, .heads = heads0_, .head_dim = head_dim0, .per_head = t,
                     .x = input_.image_to_token_q.data() + r0 * width0, .ldx = width0,
                     .vectors = s.block0_keys.data(), .out = p, .ldo = ldw});
          for (int64_t r = 0; r < block_rows; ++r) softmax_groups(p + r * ldw, heads0_, t);
          // |S~_i + P0_i centered|^2 = |S~_i|^2 + 2 P0_i . (value rows S~_i) + P0_i G0 P0_i^T
          float* const cross = thread_scratch(0, block_rows * pairs0);
          float* const quad = thread_scratch(1, block_rows * pairs0);
          head_dots({.rows = block_rows, .heads = heads0_, .head_dim = head_dim0, .per_head = t,
                     .x = image_.src_out0.data() + r0 * width0, .ldx = width0, .vectors = s.block0_values.data(),
                     .out = cross, .ldo = pairs0});
          gemm({.m = block_rows, .n = pairs0, .k = pairs0, .a = p, .lda = ldw, .b = s.block0_value_gram.data(),
                .ldb = pairs0, .b_transposed = true, .c = quad, .ldc = pairs0});
          const std::vector<double> with_cross = row_dots(p, ldw, cross, pairs0, block_rows, pairs0);
          const std::vector<double> with_quad = row_dots(p, ldw, quad, pairs0, block_rows, pairs0);
          for (int64_t r = 0; r < block_rows; ++r) {
            const auto k = static_cast<size_t>(r);
            s.block0_row_scale[r0 + r] =
                inverse_std(image_.src_norm2[r0 + r] + 2.0 * with_cross[k] + with_quad[k], width_);
          }
          scale_rows(s.block0_row_scale.data() + r0, p, ldw, block_rows, pairs0);
          token_to_image.add_block(g, r0, r1);
        }
      });
    }
    ScopedStage stage("decoder: token -> image attention");
    const std::vector<Tensor> attn_out = token_to_image.finish();
    for (size_t g = 0; g < prompts_.size(); ++g)
      prompts_[g].queries = second_.norm2(add(prompts_[g].queries, attn_out[g]));
  }

  void block1_token_mlp() { token_mlp(second_); }

  // Block 1's image -> token attention's token side: with coef_i = [a1_i P0_i,
  // P2_i] and basis = [basis0; value rows 1] (centered: B~),
  //   pre-norm row~_i = a1_i s~_i + coef_i B~ + c~,
  //   keys2_i = a2_i row~_i * g2 + b2 = (a1 a2)_i s2_i + a2_i [coef_i, 1] [B~ * g2; c~ * g2] + b2,
  // the coefficients and basis then without each head's first token (final_keys_basis).
  void prepare_block1_image_update() {
    ScopedStage stage("decoder: image -> token attention");
    const DecoderAttention& attn = second_.cross_attn_image_to_token;
    const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(attn.internal_dim() / heads1_)));
    const int64_t c = width_;
    for (PromptState& p : prompts_) {
      const int64_t t = p.token_count(), pairs0 = heads0_ * t, pairs1 = heads1_ * t, r = pairs0 + pairs1;
      p.block1_keys = split_heads(attn.k_proj(p.queries_with_pe()), heads1_, scale);
      const Tensor values = attn.v_proj(p.queries);
      p.block1_values = split_heads(values, heads1_, 1.0f);
      const Tensor value_rows1 = head_value_rows(values, attn.out_proj.weight, heads1_);
      Tensor basis = Tensor::uninitialized({r, c});
      std::copy_n(p.block0_basis.data(), pairs0 * c, basis.data());
      std::copy_n(value_rows1.data(), pairs1 * c, basis.data() + pairs0 * c);
      // basis . c~ equals B~ . c~ (c~ sums to zero), likewise basis . s~_i below.
      p.basis_dot_c = row_dots(basis.data(), c, image_.c_centered.data(), 0, r, c);
      p.block0_value_row_means.resize(static_cast<size_t>(pairs0));
      for (int64_t j = 0; j < pairs0; ++j) {
        double sum = 0;
        for (int64_t k = 0; k < c; ++k) sum += p.block0_value_rows[j * c + k];
        p.block0_value_row_means[static_cast<size_t>(j)] = sum / static_cast<double>(c);
      }
      center_rows(basis.data(), r, c);
      p.basis_gram = gram(basis);
      // The quadratic form below reads the lower-left block (block 1's rows
      // against block 0's) for both cross terms: doubled here (exactly).
      for (int64_t i = pairs0; i < r; ++i)
        for (int64_t j = 0; j < pairs0; ++j) p.basis_gram[i * r + j] *= 2.0f;
      p.final_basis = final_keys_basis(basis, heads0_, heads1_, t, image_.c_centered, second_.norm4.weight);
      p.final_coef = image_sized({image_rows_, p.final_basis.dim(0)});
      // The queries' part from block 0's update, (a1 P0) (basis0 Wq^T), enters
      // the scores as (a1 P0) times basis0's dots with the keys, basis0 . (k_h
      // Wq_h): [pairs0, pairs1] per prompt instead of a [HW, D] product.
      const Tensor keys_in_c = through_heads(p.block1_keys, attn.q_proj.weight, heads1_);
      p.block0_basis_scores = Tensor::uninitialized({pairs0, pairs1});
      gemm({.m = pairs0, .n = pairs1, .k = c, .a = p.block0_basis.data(), .lda = c, .b = keys_in_c.data(),
            .ldb = c, .b_transposed = true, .c = p.block0_basis_scores.data(), .ldc = pairs1});
      p.final_row_scale = image_sized({image_rows_});
    }
  }

  // Block 1's image -> token attention over the image rows (P2, a2, the final
  // factored rows); attend_block(g, r0, r1) then reads prompt g's rows [r0, r1).
  template <typename AttendBlock>
  void block1_image_update(const char* stage_name, AttendBlock&& attend_block) {
    const int64_t d_q2 = second_.cross_attn_image_to_token.internal_dim(), head_dim1 = d_q2 / heads1_;
    const int64_t width0 = first_.cross_attn_image_to_token.internal_dim(), head_dim0 = width0 / heads0_;
    ScopedStage stage(stage_name);
    for_row_blocks(threads_, image_rows_, kImageRowBlock, [&](int64_t r0, int64_t r1) {
      const int64_t rows = r1 - r0;
      for (size_t g = 0; g < prompts_.size(); ++g) {
        PromptState& s = prompts_[g];
        const int64_t t = s.token_count(), pairs0 = heads0_ * t, pairs1 = heads1_ * t;
        const int64_t r = pairs0 + pairs1, ldw = r, ldf = s.final_coef.dim(1);
        // Block 0's coefficients a1 P0 are the first pairs0 columns of w; block
        // 1's probabilities P2 go beside them.
        float* const w = s.coef.data() + r0 * ldw;
        float* const p2 = w + pairs0;
        // Block 1's image -> token scores: the queries without block 0's update
        // (a1 times the shared queries plus the constant) against the keys,
        // plus a1 P0 times block0_basis_scores; then the softmax.
        float* const q2 = thread_scratch(2, rows * d_q2);
        float* const a2 = thread_scratch(3, rows);
        scale_rows_add(s.block0_row_scale.data() + r0, image_.queries2_shared.data() + r0 * d_q2, d_q2,
                       image_.queries2_const.data() + r0 * d_q2, d_q2, rows, d_q2, q2, d_q2);
        head_dots({.rows = rows, .heads = heads1_, .head_dim = head_dim1, .per_head = t, .x = q2, .ldx = d_q2,
                   .vectors = s.block1_keys.data(), .out = p2, .ldo = ldw});
        gemm({.m = rows, .n = pairs1, .k = pairs0, .a = w, .lda = ldw, .b = s.block0_basis_scores.data(),
              .ldb = pairs1, .b_transposed = false, .c = p2, .ldc = ldw, .accumulate = true});
        for (int64_t i = 0; i < rows; ++i) softmax_groups(p2 + i * ldw, heads1_, t);
        // basis . s~_i: block 0's value rows through (g1 s~) Wo0 less their
        // means times g1 . s~_i (subtracted from the row's dot with w below),
        // block 1's through s~ Wo2.
        float* const cross = thread_scratch(0, rows * r);
        float* const quad = thread_scratch(1, rows * r);
        head_dots({.rows = rows, .heads = heads0_, .head_dim = head_dim0, .per_head = t,
                   .x = image_.s_g1_out0.data() + r0 * width0, .ldx = width0, .vectors = s.block0_values.data(),
                   .out = cross, .ldo = r});
        head_dots({.rows = rows, .heads = heads1_, .head_dim = head_dim1, .per_head = t,
                   .x = image_.s_out2.data() + r0 * d_q2, .ldx = d_q2, .vectors = s.block1_values.data(),
                   .out = cross + pairs0, .ldo = r});
        // w G w^T with G = [G00 G02; G20 G22] symmetric, w = [w0 w2]: w0 . (w0 G00 + 2 w2 G20) + w2 . (w2 G22),
        // three quarters of the products of w G.
        const float* const gram = s.basis_gram.data();
        gemm({.m = rows, .n = pairs0, .k = pairs0, .a = w, .lda = ldw, .b = gram, .ldb = r, .b_transposed = true,
              .c = quad, .ldc = r});
        gemm({.m = rows, .n = pairs0, .k = pairs1, .a = p2, .lda = ldw, .b = gram + pairs0 * r, .ldb = r,
              .b_transposed = false, .c = quad, .ldc = r, .accumulate = true});
        gemm({.m = rows, .n = pairs1, .k = pairs1, .a = p2, .lda = ldw, .b = gram + pairs0 * r + pairs0, .ldb = r,
              .b_transposed = true, .c = quad + pairs0, .ldc = r});
        const std::vector<double> with_cross = row_dots(w, ldw, cross, r, rows, r);
        std::vector<double> with_c(static_cast<size_t>(rows)), with_means(static_cast<size_t>(rows));
        dot_rows_with(w, ldw, s.basis_dot_c.data(), rows, r, with_c.data());
        dot_rows_with(w, ldw, s.block0_value_row_means.data(), rows, pairs0, with_means.data());
        const std::vector<double> with_quad = row_dots(w, ldw, quad, r, rows, r);
        for (int64_t i = 0; i < rows; ++i) {
          const auto k = static_cast<size_t>(i);
          const double a1 = s.block0_row_scale[r0 + i];
          const double cross_i = with_cross[k] - with_means[k] * image_.s_dot_g1[r0 + i];
          const double norm2 = a1 * a1 * image_.s_norm2[r0 + i] + 2.0 * a1 * image_.s_dot_c[r0 + i] +
                               image_.c_norm2 + 2.0 * a1 * cross_i + 2.0 * with_c[k] + with_quad[k];
          a2[i] = inverse_std(norm2, width_);
          s.final_row_scale[r0 + i] = static_cast<float>(a1) * a2[i];
        }
        float* const f = s.final_coef.data() + r0 * ldf;
        scale_rows_without_group_firsts(a2, w, ldw, rows, heads0_ + heads1_, t, f, ldf);
        for (int64_t i = 0; i < rows; ++i) {
          f[i * ldf + ldf - 2] = s.final_row_scale[r0 + i];
          f[i * ldf + ldf - 1] = a2[i];
        }
        attend_block(g, r0, r1);
      }
    });
  }

 private:
  // Columns of PromptState::coef: a1 P0 then P2.
  int64_t coef_columns(const PromptState& p) const { return (heads0_ + heads1_) * p.token_count(); }

  void token_mlp(const TwoWayAttentionBlock& block) {
    std::vector<Tensor> queries;
    for (const PromptState& p : prompts_) queries.push_back(p.queries);
    {
      ScopedStage stage("decoder: token MLP");
      add_token_mlp(block, queries, threads_);
    }
    for (size_t g = 0; g < prompts_.size(); ++g) prompts_[g].queries = queries[g];
  }

  const TwoWayAttentionBlock& first_;
  const TwoWayAttentionBlock& second_;
  const TransformerImageInput& input_;
  const LowRankImage& image_;
  const int threads_;
  const int64_t image_rows_, width_, heads0_, heads1_;
  std::vector<PromptState> prompts_;
};

}  // namespace

LowRankTwoWayTransformer::LowRankTwoWayTransformer(const TwoWayTransformerWeights& transformer)
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
    const std::vector<int64_t>& finish_rows, int threads, std::vector<LowRankBlock0>* after_block0) const {
  TwoBlockPasses passes(first_, second_, input, image, tokens, threads);
  passes.block0_token_side();
  std::vector<Tensor> queries_after_block0;
  if (after_block0 != nullptr)
    for (const PromptState& p : passes.prompts()) queries_after_block0.push_back(p.queries);
  passes.prepare_block0_image_update();
  passes.block1_self_attention();
  passes.block0_image_update_then_block1_token_to_image();
  passes.block1_token_mlp();
  passes.prepare_block1_image_update();

  // The outputs, their rows written by the last pass (the tensors share storage).
  std::vector<PromptState>& prompts = passes.prompts();
  std::vector<Output> out(prompts.size());
  std::vector<const Output*> outputs(prompts.size());
  for (size_t g = 0; g < prompts.size(); ++g) {
    const PromptState& p = prompts[g];
    out[g] = {p.queries, p.tokens, {p.final_row_scale, p.final_coef, p.final_basis, second_.norm4.bias}, {}};
    outputs[g] = &out[g];
  }
  // The final attention of the rows finish_rows attends to each block of the
  // image rows in the pass that makes it, while the block is in cache.
  if (finish_rows.empty()) {
    passes.block1_image_update("decoder: image -> token attention", [](size_t, int64_t, int64_t) {});
  } else {
    FinalTokens finishing = final_tokens_attention(final_attn_, outputs, finish_rows, image);
    passes.block1_image_update("decoder: image -> token attention, then token -> image",
                               [&](size_t g, int64_t r0, int64_t r1) { finishing.attention.add_block(g, r0, r1); });
    ScopedStage stage("decoder: final token -> image attention");
    const std::vector<Tensor> finished = finishing.finish(final_norm_);
    for (size_t g = 0; g < prompts.size(); ++g) out[g].finished = finished[g];
  }

  if (after_block0 != nullptr) {
    after_block0->clear();
    for (size_t g = 0; g < prompts.size(); ++g) {
      const PromptState& p = prompts[g];
      const int64_t rows = p.coef.dim(0), pairs0 = p.block0_basis.dim(0), ldw = p.coef.dim(1);
      Tensor coef0 = Tensor::uninitialized({rows, pairs0});
      for (int64_t i = 0; i < rows; ++i) std::copy_n(p.coef.data() + i * ldw, pairs0, coef0.data() + i * pairs0);
      after_block0->push_back({queries_after_block0[g], {p.block0_row_scale, coef0, p.block0_basis, first_.norm4.bias}});
    }
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
