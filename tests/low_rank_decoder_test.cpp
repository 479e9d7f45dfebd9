// The low-rank form of the mask decoder (model/low_rank_two_way.h) against the
// reference one (model/mask_decoder.h), end to end and stage by stage, and
// the kernels it is built from against plain loops.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "decoder_goldens.h"
#include "simd_levels.h"
#include "backends/cpu_backend.h"
#include "core/error.h"
#include "kernels/decoder/column_softmax_blocks.h"
#include "kernels/conv_transpose.h"
#include "kernels/decoder/head_products.h"
#include "kernels/decoder_rows.h"
#include "kernels/decoder/threads.h"
#include "kernels/decoder/few_vector_dots.h"
#include "kernels/gemm.h"
#include "model/low_rank_mask_decoder.h"
#include "model/mask_decoder.h"
#include "model/prompt_encoder.h"

namespace sam2rt {
namespace {

using testing::available_levels;
using testing::max_abs_error;
using testing::micro_decoder_case;
using testing::same_bits;

// The decoder goldens' tolerances (tests/mask_decoder_test.cpp).
constexpr double kLogitTolerance = 1e-4;
constexpr double kScoreTolerance = 1e-5;

Tensor random_tensor(Shape shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  Tensor t(std::move(shape));
  for (float& v : t) v = dist(rng);
  return t;
}

TEST(LowRankDecoderKernels, HeadDotsMatchReference) {
  const int64_t rows = 37, heads = 3, head_dim = 5, per_head = 4, ldx = heads * head_dim + 2;
  const Tensor x = random_tensor({rows, ldx}, 1), vectors = random_tensor({heads * per_head, head_dim}, 2);
  Tensor got = Tensor::filled({rows, heads * per_head + 1}, 7.0f), want = got.clone();
  HeadDotsArgs args{.rows = rows, .heads = heads, .head_dim = head_dim, .per_head = per_head, .x = x.data(),
                    .ldx = ldx, .vectors = vectors.data(), .out = got.data(), .ldo = heads * per_head + 1};
  head_dots(args);
  args.out = want.data();
  head_dots_reference(args);
  EXPECT_LE(max_abs_error(got, want), 1e-6);
  for (int64_t i = 0; i < rows; ++i) EXPECT_EQ(got[i * (heads * per_head + 1) + heads * per_head], 7.0f);
  // Head 1, token 2 of row 5, spelled out.
  double dot = 0;
  for (int64_t d = 0; d < head_dim; ++d) dot += x[5 * ldx + 1 * head_dim + d] * vectors[(1 * per_head + 2) * head_dim + d];
  EXPECT_NEAR(got[5 * (heads * per_head + 1) + 1 * per_head + 2], dot, 1e-6);
}

// The IoU token's final-attention scores (8 vectors over 114 basis
// coefficients) and fewer vectors; 29 rows: three blocks of eight and a tail,
// strided, the columns past count untouched; accumulating and not.
TEST(LowRankDecoderKernels, FewVectorDotsMatchReference) {
  const int64_t rows = 29, k = 114, ldx = k + 3, ldo = kMaxFewVectors + 2;
  const Tensor x = random_tensor({rows, ldx}, 11), vectors = random_tensor({kMaxFewVectors, k}, 12);
  for (const int64_t count : {int64_t{8}, int64_t{5}, int64_t{1}})
    for (const bool accumulate : {false, true}) {
      Tensor got = random_tensor({rows, ldo}, 13), want = got.clone();
      FewVectorDotsArgs args{.rows = rows, .k = k, .count = count, .x = x.data(), .ldx = ldx,
                             .vectors = vectors.data(), .out = got.data(), .ldo = ldo, .accumulate = accumulate};
      few_vector_dots(args);
      args.out = want.data();
      few_vector_dots_reference(args);
      EXPECT_LE(max_abs_error(got, want), 1e-4) << count << " " << accumulate;
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = count; j < ldo; ++j) EXPECT_EQ(got[i * ldo + j], want[i * ldo + j]);
    }
  EXPECT_THROW(few_vector_dots({.rows = 1, .k = 1, .count = kMaxFewVectors + 1}), Error);
}

// The decoder's own shapes (16-channel heads, 1 to 8 tokens each), on every
// path the CPU has (per-head GEMMs, AVX2, AVX-512), strided input and output
// rows left untouched around them; the vectorised paths round alike, so they
// agree bit for bit. 29 rows: three blocks of eight and a tail.
TEST(LowRankDecoderKernels, HeadDotsOfTheDecoderShapesMatchReference) {
  for (int64_t per_head = 1; per_head <= 8; ++per_head) {
    const int64_t rows = 29, heads = 8, head_dim = 16, ldx = heads * head_dim + 3;
    const int64_t ldo = heads * per_head + 5;
    const Tensor x = random_tensor({rows, ldx}, 11), vectors = random_tensor({heads * per_head, head_dim}, 12);
    Tensor want = Tensor::filled({rows, ldo}, 7.0f);
    HeadDotsArgs args{.rows = rows, .heads = heads, .head_dim = head_dim, .per_head = per_head, .x = x.data(),
                      .ldx = ldx, .vectors = vectors.data(), .out = want.data(), .ldo = ldo};
    head_dots_reference(args);
    Tensor vectorised;
    for (SimdLevel level : available_levels()) {
      Tensor got = Tensor::filled({rows, ldo}, 7.0f);
      args.out = got.data();
      head_dots(args, level);
      EXPECT_LE(max_abs_error(got, want), 2e-6) << per_head << " per head, " << simd_level_name(level);
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = heads * per_head; j < ldo; ++j) {
          EXPECT_EQ(got[i * ldo + j], 7.0f) << per_head << " per head, " << simd_level_name(level);
        }
      if (level == SimdLevel::baseline) continue;
      if (vectorised.numel() == 0) {
        vectorised = got;
      } else {
        EXPECT_TRUE(same_bits(got, vectorised)) << per_head << " per head, " << simd_level_name(level);
      }
    }
  }
}

// Every path: the decoder's shapes with and without a row scale (vectorised where
// the CPU can; an odd number of heads takes one head per register at AVX-512
// too) and an odd one (per-head GEMMs); outputs are added to what is there.
TEST(LowRankDecoderKernels, HeadWeightedSumsMatchReference) {
  struct Shape3 {
    int64_t heads, head_dim, per_head;
    bool scaled;
  };
  for (const Shape3 shape : {Shape3{8, 16, 8, true}, Shape3{8, 16, 8, false}, Shape3{8, 16, 5, true},
                             Shape3{8, 16, 1, false}, Shape3{3, 16, 6, true}, Shape3{3, 5, 4, false}}) {
    const int64_t rows = 45, ldw = shape.heads * shape.per_head + 3, ldx = shape.heads * shape.head_dim + 2;
    const int64_t ldo = shape.heads * shape.head_dim + 1;
    const Tensor w = random_tensor({rows, ldw}, 21), x = random_tensor({rows, ldx}, 22);
    const Tensor row_scale = random_tensor({rows}, 23);
    const Tensor start = random_tensor({shape.per_head, ldo}, 24);
    Tensor want = start.clone();
    HeadWeightedSumsArgs args{.rows = rows, .heads = shape.heads, .head_dim = shape.head_dim,
                              .per_head = shape.per_head, .w = w.data(), .ldw = ldw,
                              .row_scale = shape.scaled ? row_scale.data() : nullptr, .x = x.data(), .ldx = ldx,
                              .out = want.data(), .ldo = ldo};
    head_weighted_sums_reference(args);
    Tensor vectorised;
    for (SimdLevel level : available_levels()) {
      Tensor got = start.clone();
      args.out = got.data();
      head_weighted_sums(args, level);
      EXPECT_LE(max_abs_error(got, want), 2e-5) << shape.heads << " heads, " << simd_level_name(level);
      for (int64_t j = 0; j < shape.per_head; ++j) EXPECT_EQ(got[j * ldo + ldo - 1], want[j * ldo + ldo - 1]);
      if (level == SimdLevel::baseline || shape.head_dim != 16) continue;
      if (vectorised.numel() == 0) {
        vectorised = got;
      } else {
        EXPECT_TRUE(same_bits(got, vectorised)) << simd_level_name(level);
      }
    }
  }
}

TEST(LowRankDecoderKernels, ExpColumnBlockMatchesReference) {
  const int64_t rows = 300, cols = 45, ld = 48;  // two 16-column blocks, an 8-column block and a tail
  Tensor x = random_tensor({rows, ld}, 31);
  for (float& v : x) v *= 8.0f;
  Tensor want = x.clone();
  std::vector<float> max(cols), sum(cols), want_max(cols), want_sum(cols);
  exp_column_block(x.data(), rows, cols, ld, max.data(), sum.data());
  exp_column_block_reference(want.data(), rows, cols, ld, want_max.data(), want_sum.data());
  EXPECT_LE(max_abs_error(x, want), 1e-6);
  for (int64_t c = 0; c < cols; ++c) {
    EXPECT_EQ(max[c], want_max[c]);
    EXPECT_NEAR(sum[c], want_sum[c], 1e-5 * want_sum[c]);
  }
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = cols; c < ld; ++c) EXPECT_EQ(x[r * ld + c], want[r * ld + c]);
}

// Blocks of rows, exponentiated on their own and combined with
// column_block_scales, give the softmax down each column of the whole: also when
// the blocks' maxima lie far apart (a block's exponentials then vanish).
TEST(LowRankDecoderKernels, ColumnBlocksCombineToTheColumnSoftmax) {
  const int64_t rows = 700, cols = 21, block = 256, blocks = 3;
  Tensor x = random_tensor({rows, cols}, 32);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      x[r * cols + c] = 8.0f * x[r * cols + c] + (r >= block ? 40.0f * static_cast<float>(c % 3) : 0.0f);
    }
  std::vector<double> want(static_cast<size_t>(rows * cols));
  for (int64_t c = 0; c < cols; ++c) {
    double m = x[c], s = 0;
    for (int64_t r = 1; r < rows; ++r) m = std::max(m, static_cast<double>(x[r * cols + c]));
    for (int64_t r = 0; r < rows; ++r) s += std::exp(x[r * cols + c] - m);
    for (int64_t r = 0; r < rows; ++r) want[static_cast<size_t>(r * cols + c)] = std::exp(x[r * cols + c] - m) / s;
  }
  std::vector<float> max(blocks * cols), sum(blocks * cols), scale(blocks * cols);
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t r0 = b * block, count = std::min(rows, r0 + block) - r0;
    exp_column_block(x.data() + r0 * cols, count, cols, cols, max.data() + b * cols, sum.data() + b * cols);
  }
  column_block_scales(max.data(), sum.data(), blocks, cols, scale.data());
  double worst = 0;
  for (int64_t c = 0; c < cols; ++c) {
    double total = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const double p = static_cast<double>(x[r * cols + c]) * scale[(r / block) * cols + c];
      worst = std::max(worst, std::abs(p - want[static_cast<size_t>(r * cols + c)]));
      total += p;
    }
    EXPECT_NEAR(total, 1.0, 1e-5);
  }
  EXPECT_LE(worst, 1e-6);
}

TEST(LowRankDecoderKernels, RowHelpersMatchPlainLoops) {
  const int64_t rows = 6, c = 37;  // two 16-lane steps and a tail
  const Tensor x = random_tensor({rows, c}, 3), y = random_tensor({rows, c}, 4), scale = random_tensor({rows}, 5);
  Tensor out({rows, c}), broadcast({rows, c});
  scale_rows_add(scale.data(), x.data(), c, y.data(), c, rows, c, out.data(), c);
  scale_rows_add(scale.data(), x.data(), c, y.data(), 0, rows, c, broadcast.data(), c);
  std::vector<double> dots(rows);
  dot_rows(x.data(), c, y.data(), c, rows, c, dots.data());
  std::vector<double> v(c), with_v(rows);
  for (int64_t j = 0; j < c; ++j) v[static_cast<size_t>(j)] = 1.0 / (3.0 + static_cast<double>(j));
  dot_rows_with(x.data(), c, v.data(), rows, c, with_v.data());
  Tensor scaled = x.clone();
  scale_rows(scale.data(), scaled.data(), c, rows, c - 1);  // the last column stays
  Tensor centered = x.clone();
  center_rows(centered.data(), rows, c);
  for (int64_t r = 0; r < rows; ++r) {
    double dot = 0, mean = 0;
    for (int64_t j = 0; j < c; ++j) {
      EXPECT_EQ(out[r * c + j], scale[r] * x[r * c + j] + y[r * c + j]);
      EXPECT_EQ(broadcast[r * c + j], scale[r] * x[r * c + j] + y[j]);
      EXPECT_EQ(scaled[r * c + j], j < c - 1 ? scale[r] * x[r * c + j] : x[r * c + j]);
      dot += static_cast<double>(x[r * c + j]) * y[r * c + j];
      mean += x[r * c + j];
    }
    EXPECT_NEAR(dots[static_cast<size_t>(r)], dot, 1e-12);
    double dot_v = 0;
    for (int64_t j = 0; j < c; ++j) dot_v += static_cast<double>(x[r * c + j]) * v[static_cast<size_t>(j)];
    EXPECT_NEAR(with_v[static_cast<size_t>(r)], dot_v, 1e-12);
    double centered_sum = 0;
    for (int64_t j = 0; j < c; ++j) {
      EXPECT_NEAR(centered[r * c + j], x[r * c + j] - mean / c, 1e-6);
      centered_sum += centered[r * c + j];
    }
    EXPECT_NEAR(centered_sum, 0.0, 1e-5);
  }
}

// Groups of 8 (the vector path) and of 5 (the plain loop): every column but
// each group's first, scaled, in order, and nothing written past them.
TEST(LowRankDecoderKernels, ScaleRowsWithoutGroupFirstsKeepsTheOthers) {
  for (const int64_t group : {8, 5}) {
    SCOPED_TRACE("groups of " + std::to_string(group));
    const int64_t rows = 5, groups = 16, ldx = groups * group + 3, kept = groups * (group - 1), ldo = kept + 2;
    const Tensor x = random_tensor({rows, ldx}, 41), scale = random_tensor({rows}, 42);
    Tensor out({rows, ldo});
    for (float& v : out) v = 7.0f;
    scale_rows_without_group_firsts(scale.data(), x.data(), ldx, rows, groups, group, out.data(), ldo);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t g = 0; g < groups; ++g)
        for (int64_t j = 1; j < group; ++j) {
          EXPECT_EQ(out[r * ldo + g * (group - 1) + j - 1], scale[r] * x[r * ldx + g * group + j]);
        }
      EXPECT_EQ(out[r * ldo + kept], 7.0f);
      EXPECT_EQ(out[r * ldo + kept + 1], 7.0f);
    }
  }
}

TEST(LowRankDecoderKernels, ScatterOfTapsIsTheTransposedConvolution) {
  const int64_t cin = 6, cout = 3, h = 4, w = 5;
  const Tensor x = random_tensor({1, cin, h, w}, 6), weight = random_tensor({cin, cout, 2, 2}, 7);
  const Tensor want = conv_transpose_2x2_stride2_reference(x, weight, Tensor());
  const Tensor taps = pack_conv_transpose_2x2_taps(weight);
  Tensor x_hwc({h * w, cin});
  for (int64_t ch = 0; ch < cin; ++ch)
    for (int64_t p = 0; p < h * w; ++p) x_hwc[p * cin + ch] = x[ch * h * w + p];
  Tensor products({h * w, 4 * cout}), out({4 * h * w, cout});
  gemm_reference({.m = h * w, .n = 4 * cout, .k = cin, .a = x_hwc.data(), .lda = cin, .b = taps.data(),
                  .ldb = 4 * cout, .b_transposed = false, .c = products.data(), .ldc = 4 * cout});
  scatter_2x2_taps(products.data(), h, w, cout, nullptr, nullptr, out.data());
  for (int64_t o = 0; o < cout; ++o)
    for (int64_t p = 0; p < 4 * h * w; ++p) EXPECT_NEAR(out[p * cout + o], want[o * 4 * h * w + p], 1e-5) << o << " " << p;
}

// The micro case's fast path with its image state, and the reference decoder
// on a CPU backend with the same features. Made within a DecoderThreads scope,
// as SamHeads runs the decoder: oneDNN on the calling thread only.
struct MicroDecoders {
  const testing::DecoderCase& c = micro_decoder_case();
  const PromptEncoder prompts{c.config, c.weights};
  const LowRankMaskDecoder decoder{c.config, c.weights, prompts.dense_pe()};
  const DecoderImageState image = decoder.prepare_image(c.features, prompts.embed_dense(Prompt{}), 2);
  const std::shared_ptr<CpuBackend> backend = std::make_shared<CpuBackend>();
  const MaskDecoder reference{c.config, c.weights, prompts.dense_pe(), prompts.embed_dense(Prompt{}), backend};
  const DeviceDecoderFeatures features = upload_decoder_features(*backend, c.features);
};

// The micro goldens' prompts without mask input, decoded by the fast path and
// by the reference decoder on the CPU backend.
TEST(LowRankDecoder, MatchesTheReferenceDecoderOnMicro) {
  const DecoderThreads scope;
  const MicroDecoders m;
  const auto& [c, prompts, decoder, image, backend, reference, features] = m;
  int compared = 0;
  for (const auto& g : c.prompts) {
    if (!g.prompt.mask_input.empty()) continue;
    SCOPED_TRACE(g.name);
    const Tensor sparse = prompts.embed_sparse(g.prompt, c.orig_w, c.orig_h);
    const MaskDecoderOutput low_rank = decoder.predict_masks(image, sparse, 2);
    const MaskDecoderOutput direct = reference.predict_masks(features, sparse);
    EXPECT_LE(max_abs_error(low_rank.masks, direct.masks), kLogitTolerance);
    EXPECT_LE(max_abs_error(low_rank.iou, direct.iou), kScoreTolerance);
    EXPECT_NEAR(low_rank.object_score_logit, direct.object_score_logit, kScoreTolerance);
    // Alone or in a batch (one thread per prompt), the same bits.
    const MaskDecoderOutput one_thread = decoder.predict_masks(image, sparse, 1);
    ASSERT_EQ(one_thread.masks.numel(), low_rank.masks.numel());
    EXPECT_EQ(std::memcmp(one_thread.masks.data(), low_rank.masks.data(), sizeof(float) * low_rank.masks.numel()), 0);
    EXPECT_EQ(std::memcmp(one_thread.iou.data(), low_rank.iou.data(), sizeof(float) * low_rank.iou.numel()), 0);
    ++compared;
  }
  EXPECT_GE(compared, 3);
}


// Rows of `x` [n, c] centered (minus their mean), in double.
std::vector<double> centered_rows(const std::vector<double>& x, int64_t n, int64_t c) {
  std::vector<double> out(x);
  for (int64_t i = 0; i < n; ++i) {
    double mean = 0;
    for (int64_t j = 0; j < c; ++j) mean += x[static_cast<size_t>(i * c + j)];
    mean /= static_cast<double>(c);
    for (int64_t j = 0; j < c; ++j) out[static_cast<size_t>(i * c + j)] -= mean;
  }
  return out;
}

// Factored image rows made whole, row i = row_scale[i] * shared_i + coef[i] .
// basis + bias (LowRankKeys), in double: [n, c].
Tensor whole_rows(const LowRankKeys& keys, const std::vector<double>& shared, int64_t n, int64_t c) {
  const int64_t r = keys.basis.dim(0);
  Tensor out({n, c});
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < c; ++j) {
      double v = keys.row_scale[i] * shared[static_cast<size_t>(i * c + j)] + keys.bias[j];
      for (int64_t k = 0; k < r; ++k) v += static_cast<double>(keys.coef[i * r + k]) * keys.basis[k * c + j];
      out[i * c + j] = static_cast<float>(v);
    }
  return out;
}

// The low-rank transformer against the reference decoder's, stage by stage
// (docs/LOW_RANK.md's identities): the tokens after block 0, block 1 and the
// final attention, and the image rows after each block, made whole from their
// factored form: block 0's with shared part s = (src + block 0's image -> token
// out bias, centered) * g1, block 1's with s2 = centered(s) * g2. Micro's
// prompts without mask input.
TEST(LowRankDecoder, MatchesTheReferenceDecoderStageByStage) {
  const DecoderThreads scope;
  const MicroDecoders m;
  const auto& [c, prompts, decoder, image, backend, reference, features] = m;

  // The image rows' shared parts, from src and the norms' weights.
  const std::string t = "sam_mask_decoder.transformer.layers.";
  const Tensor& out_bias0 = c.weights.at(t + "0.cross_attn_image_to_token.out_proj.bias");
  const Tensor& g1 = c.weights.at(t + "0.norm4.weight");
  const Tensor& g2 = c.weights.at(t + "1.norm4.weight");
  const Tensor& src = image.no_mask.src;
  const int64_t n = src.dim(0), width = src.dim(1);
  std::vector<double> s(static_cast<size_t>(n * width));
  for (int64_t i = 0; i < n * width; ++i) s[static_cast<size_t>(i)] = static_cast<double>(src[i]) + out_bias0[i % width];
  s = centered_rows(s, n, width);
  for (int64_t i = 0; i < n * width; ++i) s[static_cast<size_t>(i)] *= g1[i % width];
  std::vector<double> s2 = centered_rows(s, n, width);
  for (int64_t i = 0; i < n * width; ++i) s2[static_cast<size_t>(i)] *= g2[i % width];

  int compared = 0;
  for (const auto& g : c.prompts) {
    if (!g.prompt.mask_input.empty()) continue;
    SCOPED_TRACE(g.name);
    const Tensor sparse = prompts.embed_sparse(g.prompt, c.orig_w, c.orig_h);
    MaskDecoder::TransformerTrace want;
    reference.predict_masks_traced(features, sparse, want);
    ASSERT_EQ(want.queries_after_block.size(), 2u);
    const Tensor tokens = decoder.tokens(sparse);
    std::vector<int64_t> every_token(static_cast<size_t>(tokens.dim(0)));
    for (size_t i = 0; i < every_token.size(); ++i) every_token[i] = static_cast<int64_t>(i);
    std::vector<LowRankBlock0> after_block0;
    const std::vector<LowRankTwoWayTransformer::Output> got = decoder.transformer().forward(
        {tokens}, image.no_mask, image.low_rank, every_token, 2, &after_block0);
    ASSERT_EQ(got.size(), 1u);
    ASSERT_EQ(after_block0.size(), 1u);

    EXPECT_LE(max_abs_error(after_block0[0].queries, want.queries_after_block[0]), kLogitTolerance);
    EXPECT_LE(max_abs_error(whole_rows(after_block0[0].keys, s, n, width), want.keys_after_block[0].reshaped({n, width})),
              kLogitTolerance);
    EXPECT_LE(max_abs_error(got[0].queries, want.queries_after_block[1]), kLogitTolerance);
    EXPECT_LE(max_abs_error(whole_rows(got[0].keys, s2, n, width), want.keys_after_block[1].reshaped({n, width})),
              kLogitTolerance);
    EXPECT_LE(max_abs_error(got[0].finished, want.final_queries), kLogitTolerance);
    ++compared;
  }
  EXPECT_GE(compared, 3);
}

// Prompts decoded in lockstep (one group, mixed token counts) give each prompt
// the bits it gets alone, also when the IoU filter skips some of their upscalings.
TEST(LowRankDecoder, GroupInLockstepEqualsOneByOne) {
  const DecoderThreads scope;
  const MicroDecoders m;
  const auto& [c, prompts, decoder, image, backend, reference, features] = m;
  std::vector<Tensor> sparse;
  for (const auto& g : c.prompts) {
    if (g.prompt.mask_input.empty()) sparse.push_back(prompts.embed_sparse(g.prompt, c.orig_w, c.orig_h));
  }
  ASSERT_GE(sparse.size(), 3u);
  EXPECT_NE(sparse.front().numel(), sparse.back().numel()) << "the group should mix token counts";
  int asked = 0;
  const MasksWanted every_other = [&asked](const Tensor&) { return asked++ % 2 == 0; };
  for (const bool filtered : {false, true}) {
    asked = 0;
    const std::vector<MaskDecoderOutput> group =
        decoder.predict_masks(image, sparse, 1, filtered ? every_other : MasksWanted{});
    ASSERT_EQ(group.size(), sparse.size());
    for (size_t g = 0; g < sparse.size(); ++g) {
      SCOPED_TRACE("prompt " + std::to_string(g) + (filtered ? ", filtered" : ""));
      const MaskDecoderOutput alone = decoder.predict_masks(image, sparse[g], 2);
      ASSERT_EQ(group[g].iou.numel(), alone.iou.numel());
      EXPECT_EQ(std::memcmp(group[g].iou.data(), alone.iou.data(), sizeof(float) * alone.iou.numel()), 0);
      if (filtered && g % 2 == 1) {
        EXPECT_TRUE(group[g].masks.empty());
        EXPECT_EQ(group[g].object_score_logit, 0.0f) << "a skipped prompt's object score is not computed";
        continue;
      }
      EXPECT_EQ(group[g].object_score_logit, alone.object_score_logit);
      ASSERT_EQ(group[g].masks.numel(), alone.masks.numel());
      EXPECT_EQ(std::memcmp(group[g].masks.data(), alone.masks.data(), sizeof(float) * alone.masks.numel()), 0);
    }
  }
}

}  // namespace
}  // namespace sam2rt
