// The encoder's fast kernels (every SIMD path the CPU has, the oneDNN matmul
// wrapper, the buffer pool) against plain references.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "random_tensor.h"
#include "simd_levels.h"
#include "core/error.h"
#include "kernels/bf16.h"
#include "kernels/bf16_gemm.h"
#include "kernels/buffer_pool.h"
#include "kernels/gelu.h"
#include "kernels/gemm.h"
#include "kernels/interpolate.h"
#include "kernels/matmul.h"
#include "kernels/norm.h"
#include "kernels/simd.h"
#include "kernels/softmax.h"
#include "kernels/attention.h"
#include "kernels/window.h"
#include "kernels/window_attention.h"

// Wide vectors are passed only between functions compiled for their ISA (simd.h).
#pragma GCC diagnostic ignored "-Wpsabi"

namespace sam2rt {
namespace {

using testing::available_levels;
using testing::random_tensor;
using testing::same_bits;

double max_abs_diff(const float* a, const float* b, int64_t n) {
  double worst = 0.0;
  for (int64_t i = 0; i < n; ++i) worst = std::max(worst, std::fabs(double(a[i]) - b[i]));
  return worst;
}

// The CTest runs GoldensWithoutAvx512 / GoldensOnBaselineX86 set SAM2RT_MAX_SIMD;
// this checks the cap took effect there (and that no cap means the CPU's level).
TEST(FastKernels, SimdLevelHonoursTheEnvironmentCap) {
  const char* cap = std::getenv("SAM2RT_MAX_SIMD");
  if (cap == nullptr) GTEST_SKIP() << "SAM2RT_MAX_SIMD not set";
  const std::string name(cap);
  if (name == "avx2") {
    EXPECT_LE(best_simd_level(), SimdLevel::avx2);
  } else if (name == "baseline") {
    EXPECT_EQ(best_simd_level(), SimdLevel::baseline);
  }
  if (best_simd_level() < SimdLevel::avx512) {
    EXPECT_FALSE(bf16_gemm_supported());
  }
}

// simd::exp_fused on each vector width, for the test below.
[[gnu::target("avx512f")]] void exp_fused_16(const float* in, float* out, int64_t n) {
  using V = simd::Types<16>::F;
  for (int64_t i = 0; i < n; i += 16) simd::store(out + i, simd::exp_fused(simd::load<V>(in + i)));
}
[[gnu::target("avx2,fma")]] void exp_fused_8(const float* in, float* out, int64_t n) {
  using V = simd::Types<8>::F;
  for (int64_t i = 0; i < n; i += 8) simd::store(out + i, simd::exp_fused(simd::load<V>(in + i)));
}

// The softmaxes' exp with fused multiply-adds: within 2 ulp of exp over the
// range it serves (below -87.3 it gives ~1e-38), the same bits on both widths,
// the clamped ends (infinities, huge values) included.
TEST(FastKernels, FusedExpMatchesExpOnEveryVectorPath) {
  std::vector<float> x;
  for (float v = -87.0f; v <= 88.0f; v += 0.0137f) x.push_back(v);
  const size_t in_range = x.size();
  for (float v : {-INFINITY, -1e30f, -87.5f, -87.3f, 88.3f, 88.5f, 1e30f, INFINITY}) x.push_back(v);
  x.resize((x.size() + 15) / 16 * 16, 0.0f);
  const auto n = static_cast<int64_t>(x.size());
  std::vector<float> first;
  for (SimdLevel level : available_levels()) {
    if (level == SimdLevel::baseline) continue;
    std::vector<float> y(x.size());
    if (level == SimdLevel::avx512) exp_fused_16(x.data(), y.data(), n);
    if (level == SimdLevel::avx2) exp_fused_8(x.data(), y.data(), n);
    for (size_t i = 0; i < in_range; ++i) {
      const double want = std::exp(static_cast<double>(x[i]));
      const double ulp = std::nextafter(static_cast<float>(want), INFINITY) - static_cast<float>(want);
      ASSERT_LE(std::abs(y[i] - want), 2.0 * ulp) << simd_level_name(level) << " x = " << x[i];
    }
    if (first.empty()) {
      first = y;
      continue;
    }
    EXPECT_EQ(0, std::memcmp(first.data(), y.data(), y.size() * sizeof(float))) << simd_level_name(level);
  }
}

TEST(FastKernels, SoftmaxEveryPathMatchesReference) {
  // Odd widths exercise the vector tails; a large spread exercises exp's range.
  for (const int64_t cols : {1, 7, 16, 33, 4096}) {
    const Tensor x = random_tensor({5, cols + 3}, 1, 30.0f);
    Tensor expected = x.clone();
    softmax_rows_reference(expected.data(), 5, cols, cols + 3);
    for (SimdLevel level : available_levels()) {
      Tensor actual = x.clone();
      softmax_rows(actual.data(), 5, cols, cols + 3, level);
      for (int64_t r = 0; r < 5; ++r) {
        for (int64_t c = 0; c < cols; ++c) {
          const int64_t i = r * (cols + 3) + c;
          EXPECT_NEAR(actual[i], expected[i], 4e-6 * expected[i] + 1e-9) << simd_level_name(level) << " " << cols;
        }
        for (int64_t c = cols; c < cols + 3; ++c) EXPECT_EQ(actual[r * (cols + 3) + c], x[r * (cols + 3) + c]);
      }
    }
  }
}

TEST(FastKernels, ExpRowsToBf16EveryPathMatchesReference) {
  for (const int64_t cols : {1, 7, 16, 33, 4096}) {
    const Tensor x = random_tensor({5, cols + 3}, 6, 30.0f);
    for (SimdLevel level : available_levels()) {
      std::vector<uint16_t> out(static_cast<size_t>(5 * (cols + 1)), 0xABCD);
      std::vector<float> sums(5);
      exp_rows_to_bf16(x.data(), 5, cols, cols + 3, out.data(), cols + 1, sums.data(), level);
      for (int64_t r = 0; r < 5; ++r) {
        const float* row = x.data() + r * (cols + 3);
        const double max = *std::max_element(row, row + cols);
        double sum = 0.0;
        for (int64_t c = 0; c < cols; ++c) {
          const double e = std::exp(row[c] - max);
          sum += e;
          // The float e^x is within 2 ulp, then rounded to 8 bits of mantissa.
          EXPECT_NEAR(simd::from_bf16(out[static_cast<size_t>(r * (cols + 1) + c)]), e, e * (1.0 / 256 + 1e-6))
              << simd_level_name(level) << " " << cols;
        }
        EXPECT_NEAR(sums[static_cast<size_t>(r)], sum, 4e-6 * sum) << simd_level_name(level) << " " << cols;
        EXPECT_EQ(out[static_cast<size_t>(r * (cols + 1) + cols)], 0xABCD) << "wrote past cols";
      }
    }
  }
}

TEST(FastKernels, GroupSoftmaxEveryPathMatchesReference) {
  // Group sizes around the decoder's token counts; 37 groups leave a vector tail.
  for (const int64_t group : {1, 3, 8, 11, 17}) {
    const Tensor x = random_tensor({37, group}, 5, 30.0f);
    Tensor expected = x.clone();
    softmax_rows_reference(expected.data(), 37, group, group);
    for (SimdLevel level : available_levels()) {
      Tensor actual = x.clone();
      softmax_groups(actual.data(), 37, group, level);
      for (int64_t i = 0; i < x.numel(); ++i) {
        EXPECT_NEAR(actual[i], expected[i], 4e-6 * expected[i] + 1e-9) << simd_level_name(level) << " " << group;
      }
    }
  }
}

// Groups of 8 (a one-click prompt's tokens) have their own AVX2 and AVX-512
// paths, which spread the max and sum by the same lane swaps: equal bit for bit.
TEST(FastKernels, GroupSoftmaxOfEightIsTheSameOnEveryVectorPath) {
  const Tensor x = random_tensor({16, 8}, 6, 30.0f);
  Tensor first;
  for (SimdLevel level : available_levels()) {
    if (level == SimdLevel::baseline) continue;
    Tensor actual = x.clone();
    softmax_groups(actual.data(), 16, 8, level);
    if (first.numel() == 0) {
      first = actual;
      continue;
    }
    EXPECT_TRUE(same_bits(actual, first)) << simd_level_name(level);
  }
}

TEST(FastKernels, LayerNormEveryPathMatchesReference) {
  for (const int64_t c : {96, 37}) {
    const Tensor x = random_tensor({300, c}, 2, 4.0f), w = random_tensor({c}, 3), b = random_tensor({c}, 4);
    const Tensor expected = layer_norm(x, w, b, 1e-6f);
    for (SimdLevel level : available_levels()) {
      Tensor y({300, c});
      layer_norm_rows(x.data(), c, 300, c, w.data(), b.data(), 1e-6f, y.data(), c, level);
      EXPECT_LE(max_abs_diff(y.data(), expected.data(), y.numel()), 2e-6) << simd_level_name(level) << " " << c;
      std::vector<uint16_t> y16(static_cast<size_t>(y.numel()));
      layer_norm_rows(x.data(), c, 300, c, w.data(), b.data(), 1e-6f, y16.data(), c, level);
      for (int64_t i = 0; i < y.numel(); ++i) {
        EXPECT_NEAR(simd::from_bf16(y16[static_cast<size_t>(i)]), expected[i], std::fabs(expected[i]) / 256 + 1e-6);
      }
    }
  }
}

// Rows normalised in groups (AVX-512 takes 16 at a time where the width is a
// multiple of 16) round as each row normalised alone, at every level, to float
// and to bfloat16; rows after the last whole group included.
TEST(FastKernels, LayerNormRowGroupsRoundAsSingleRows) {
  const int64_t rows = 16 * 5 + 7;
  for (const int64_t c : {64, 96, 48}) {
    const Tensor x = random_tensor({rows, c}, 12, 4.0f), w = random_tensor({c}, 13), b = random_tensor({c}, 14);
    for (SimdLevel level : available_levels()) {
      Tensor together({rows, c}), alone({rows, c});
      std::vector<uint16_t> together16(static_cast<size_t>(rows * c)), alone16(together16.size());
      layer_norm_rows(x.data(), c, rows, c, w.data(), b.data(), 1e-6f, together.data(), c, level);
      layer_norm_rows(x.data(), c, rows, c, w.data(), b.data(), 1e-6f, together16.data(), c, level);
      for (int64_t r = 0; r < rows; ++r) {
        layer_norm_rows(x.data() + r * c, c, 1, c, w.data(), b.data(), 1e-6f, alone.data() + r * c, c, level);
        layer_norm_rows(x.data() + r * c, c, 1, c, w.data(), b.data(), 1e-6f, alone16.data() + r * c, c, level);
      }
      EXPECT_TRUE(same_bits(together, alone)) << simd_level_name(level) << " " << c;
      EXPECT_EQ(together16, alone16) << simd_level_name(level) << " " << c;
    }
  }
}

TEST(FastKernels, Bf16RoundsToNearestEven) {
  const float values[] = {1.0f, 1.00390625f /* tie: stays 1 */, 1.01171875f /* tie: rounds up */, -3.3f, 0.0f};
  const uint16_t expected[] = {0x3f80, 0x3f80, 0x3f82, 0xc053, 0x0000};
  std::vector<uint16_t> out(5);
  convert_to_bf16(values, out.data(), 5);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(out[static_cast<size_t>(i)], expected[i]) << values[i];
  EXPECT_TRUE(std::isnan(simd::from_bf16(simd::to_bf16(NAN))));
}

// y = epilogue(x W^T + b) against gemm_reference, fp32 and bf16.
TEST(FastKernels, PackedLinearMatchesReferenceWithEveryEpilogue) {
  const int64_t rows = 37, in = 40, out = 24;
  const Tensor w = random_tensor({out, in}, 5), b = random_tensor({out}, 6), x = random_tensor({rows, in}, 7);
  const Tensor residual = random_tensor({rows, out}, 8);
  Tensor plain({rows, out});
  gemm_reference({.m = rows, .n = out, .k = in, .a = x.data(), .lda = in, .b = w.data(), .ldb = in,
                  .b_transposed = true, .c = plain.data(), .ldc = out});
  for (int64_t i = 0; i < plain.numel(); ++i) plain[i] += b[i % out];

  const PackedLinear fp32(w, b, MatmulPrecision::fp32);
  for (MatmulEpilogue e :
       {MatmulEpilogue::none, MatmulEpilogue::gelu, MatmulEpilogue::accumulate, MatmulEpilogue::relu}) {
    Tensor y = e == MatmulEpilogue::accumulate ? residual.clone() : Tensor({rows, out});
    fp32.forward(x.data(), rows, y.data(), e);
    for (int64_t i = 0; i < y.numel(); ++i) {
      const double v = plain[i];
      const double expected = e == MatmulEpilogue::gelu         ? 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)))
                              : e == MatmulEpilogue::accumulate ? v + residual[i]
                              : e == MatmulEpilogue::relu       ? std::max(v, 0.0)
                                                                : v;
      EXPECT_NEAR(y[i], expected, 2e-5) << static_cast<int>(e) << " at " << i;
    }
  }

  // bf16: the reference on the bf16-rounded operands, float accumulation.
  const PackedLinear bf16(w, b, MatmulPrecision::bf16);
  Tensor y({rows, out});
  if (bf16_matmul_supported()) {
    std::vector<uint16_t> x16(static_cast<size_t>(x.numel()));
    convert_to_bf16(x.data(), x16.data(), x.numel());
    bf16.forward(x16.data(), rows, y.data());
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t o = 0; o < out; ++o) {
        double expected = b[o];
        for (int64_t k = 0; k < in; ++k) {
          expected += double(simd::from_bf16(x16[static_cast<size_t>(r * in + k)])) *
                      simd::from_bf16(simd::to_bf16(w[o * in + k]));
        }
        EXPECT_NEAR(y[r * out + o], expected, 1e-4);
      }
    }
  }
  EXPECT_THROW(bf16.forward(x.data(), rows, y.data()), Error);
  EXPECT_THROW(PackedLinear(w, random_tensor({3}, 9), MatmulPrecision::fp32), Error);
}

// Large GEMMs run as row chunks on the OpenMP threads (one primitive for the
// full chunks, one for the shorter last chunk), several at once: every row,
// first to last, must come out as the reference has it, with each epilogue, at
// 1 and 2 threads. The inner size is large enough for oneDNN to want scratch
// memory (shared between threads, it garbled rows). Tolerance: float rounding
// of the sum of |x w| terms.
TEST(FastKernels, PackedLinearSplitIntoRowChunksMatchesReference) {
  const int64_t rows = 520, in = 1536, out = 384;
  const Tensor w = random_tensor({out, in}, 11), b = random_tensor({out}, 12), x = random_tensor({rows, in}, 13);
  const Tensor residual = random_tensor({rows, out}, 14);
  Tensor plain({rows, out}), magnitude({rows, out});
  gemm_reference({.m = rows, .n = out, .k = in, .a = x.data(), .lda = in, .b = w.data(), .ldb = in,
                  .b_transposed = true, .c = plain.data(), .ldc = out});
  Tensor abs_x = x.clone(), abs_w = w.clone();
  for (int64_t i = 0; i < abs_x.numel(); ++i) abs_x[i] = std::fabs(abs_x[i]);
  for (int64_t i = 0; i < abs_w.numel(); ++i) abs_w[i] = std::fabs(abs_w[i]);
  gemm_reference({.m = rows, .n = out, .k = in, .a = abs_x.data(), .lda = in, .b = abs_w.data(), .ldb = in,
                  .b_transposed = true, .c = magnitude.data(), .ldc = out});
  for (int64_t i = 0; i < plain.numel(); ++i) plain[i] += b[i % out];
  const PackedLinear fp32(w, b, MatmulPrecision::fp32);
  const int saved_threads = omp_get_max_threads();
  for (int threads : {2, 1}) {
    omp_set_num_threads(threads);
    for (MatmulEpilogue e : {MatmulEpilogue::none, MatmulEpilogue::gelu, MatmulEpilogue::accumulate}) {
      Tensor y = e == MatmulEpilogue::accumulate ? residual.clone() : Tensor({rows, out});
      fp32.forward(x.data(), rows, y.data(), e);
      int64_t wrong = 0;
      for (int64_t i = 0; i < y.numel(); ++i) {
        const double v = plain[i];
        const double expected = e == MatmulEpilogue::gelu         ? 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)))
                                : e == MatmulEpilogue::accumulate ? v + residual[i]
                                                                  : v;
        if (!(std::fabs(y[i] - expected) <= 1e-6 * (magnitude[i] + 1.0) + 2e-6 * std::fabs(expected))) ++wrong;
      }
      EXPECT_EQ(wrong, 0) << threads << " threads, epilogue " << static_cast<int>(e);
    }
  }
  omp_set_num_threads(saved_threads);
}

// mlp_forward runs both layers of an MLP row chunk by row chunk: the bits must be
// those of the two forward calls through a whole hidden tensor, for inputs split
// into chunks (several thread counts, a shorter last chunk) and for small ones.
TEST(FastKernels, MlpForwardGivesTheBitsOfItsTwoLayersInTurn) {
  const int64_t in = 48, hidden = 192, out = 48;
  const Tensor w1 = random_tensor({hidden, in}, 31), b1 = random_tensor({hidden}, 32);
  const Tensor w2 = random_tensor({out, hidden}, 33), b2 = random_tensor({out}, 34);
  const int saved_threads = omp_get_max_threads();
  for (MatmulPrecision precision : {MatmulPrecision::fp32, MatmulPrecision::bf16}) {
    if (precision == MatmulPrecision::bf16 && !bf16_matmul_supported()) continue;
    const PackedLinear expand(w1, b1, precision), contract(w2, b2, precision);
    for (int threads : {2, 1}) {
      omp_set_num_threads(threads);
      for (int64_t rows : {int64_t{1000}, int64_t{37}}) {
        const Tensor x = random_tensor({rows, in}, 35), residual = random_tensor({rows, out}, 36);
        Tensor expected = residual.clone(), actual = residual.clone();
        if (precision == MatmulPrecision::fp32) {
          Tensor h({rows, hidden});
          expand.forward(x.data(), rows, h.data(), MatmulEpilogue::gelu);
          contract.forward(h.data(), rows, expected.data(), MatmulEpilogue::accumulate);
          mlp_forward(expand, contract, x.data(), rows, actual.data());
        } else {
          std::vector<uint16_t> x16(static_cast<size_t>(x.numel())), h16(static_cast<size_t>(rows * hidden));
          convert_to_bf16(x.data(), x16.data(), x.numel());
          expand.forward(x16.data(), rows, h16.data(), MatmulEpilogue::gelu);
          contract.forward(h16.data(), rows, expected.data(), MatmulEpilogue::accumulate);
          mlp_forward(expand, contract, x16.data(), rows, actual.data());
        }
        for (int64_t i = 0; i < actual.numel(); ++i) {
          ASSERT_EQ(actual[i], expected[i]) << (precision == MatmulPrecision::bf16 ? "bf16" : "fp32") << ", "
                                            << threads << " threads, " << rows << " rows, at " << i;
        }
      }
    }
  }
  omp_set_num_threads(saved_threads);
  const PackedLinear expand(w1, b1, MatmulPrecision::fp32), mismatched(w1, b1, MatmulPrecision::fp32);
  Tensor y({4, hidden});
  EXPECT_THROW(mlp_forward(expand, mismatched, random_tensor({4, in}, 37).data(), 4, y.data()), Error);
}

TEST(FastKernels, BufferPoolRecyclesReleasedBuffers) {
  BufferPool pool;
  const float* first = nullptr;
  {
    Tensor a = pool.tensor({1000, 1000});
    first = a.data();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 64, 0u);
    EXPECT_GE(pool.bytes_in_use(), 4000000u);
  }
  EXPECT_EQ(pool.bytes_in_use(), 0u);
  const size_t footprint = pool.bytes_reserved();
  EXPECT_GE(footprint, 4000000u);
  Tensor b = pool.tensor({1000, 1000});
  EXPECT_EQ(b.data(), first);  // reused, not a fresh allocation
  Tensor c = pool.tensor({1000, 1000});
  EXPECT_NE(c.data(), b.data());  // a buffer in use is never handed out twice
  EXPECT_GE(c.data(), b.data() + 1000 * 1000);  // and never overlaps one
  Tensor survivor;
  {
    BufferPool short_lived;
    survivor = short_lived.tensor({10});
  }
  survivor[9] = 1.0f;  // still valid after its pool is gone
  EXPECT_EQ(survivor[9], 1.0f);
}

TEST(FastKernels, BufferPoolReusesFreedMemoryForOtherSizes) {
  // The footprint is the peak of what is live at once: freed neighbours merge,
  // and smaller or larger later requests reuse them.
  BufferPool pool;
  const float* base = nullptr;
  {
    Tensor a = pool.tensor({1 << 20});
    Tensor b = pool.tensor({1 << 20});
    base = a.data();
    EXPECT_EQ(b.data(), base + (1 << 20));
  }
  const size_t peak = pool.bytes_reserved();
  {
    Tensor whole = pool.tensor({2 << 20});  // both freed blocks, merged
    EXPECT_EQ(whole.data(), base);
  }
  for (int64_t size : {int64_t{3}, int64_t{100000}, int64_t{700000}, int64_t{1 << 20}}) {
    Tensor small = pool.tensor({size});
    Tensor other = pool.tensor({(2 << 20) - size - 1024});
    EXPECT_EQ(small.data(), base) << size;
  }
  EXPECT_EQ(pool.bytes_reserved(), peak);
  EXPECT_EQ(pool.bytes_in_use(), 0u);
}

// Attention over rows of qkv [n, 3 * heads * head_dim] (q | k | v), scale 0.35;
// out rows of stride ldo are set by the caller.
AttentionArgs qkv_rows_attention(const Tensor& qkv, int64_t nq, int64_t nk, int64_t heads, int64_t head_dim,
                                 int64_t ldo) {
  const int64_t width = heads * head_dim;
  AttentionArgs a;
  a.nq = nq;
  a.nk = nk;
  a.heads = heads;
  a.head_dim = head_dim;
  a.q = qkv.data();
  a.k = qkv.data() + width;
  a.v = qkv.data() + 2 * width;
  a.ldq = a.ldk = a.ldv = 3 * width;
  a.ldo = ldo;
  a.scale = 0.35f;
  return a;
}

TEST(FastKernels, AttentionMatchesReferenceAcrossQueryBlocks) {
  // More queries than one block (and a partial last block), strided rows.
  for (auto [nq, nk] : {std::pair<int64_t, int64_t>{300, 257}, {1, 5}, {128, 128}, {129, 1000}}) {
    const int64_t heads = 2, head_dim = 8, width = heads * head_dim;
    const Tensor qkv = random_tensor({std::max(nq, nk), 3 * width}, 31);
    AttentionArgs a = qkv_rows_attention(qkv, nq, nk, heads, head_dim, width + 3);
    Tensor fast({nq, width + 3}), reference({nq, width + 3});
    a.out = fast.data();
    attention(a);
    Tensor serial({nq, width + 3});
    a.out = serial.data();
    attention_serial(a);
    a.out = reference.data();
    attention_reference(a);
    double worst = 0.0, worst_serial = 0.0;
    for (int64_t i = 0; i < nq; ++i) {
      for (int64_t j = 0; j < width; ++j) {
        const int64_t at = i * (width + 3) + j;
        worst = std::max(worst, std::abs(double(fast[at]) - reference[at]));
        worst_serial = std::max(worst_serial, std::abs(double(serial[at]) - reference[at]));
      }
    }
    EXPECT_LE(worst, 2e-6) << nq << " queries, " << nk << " keys";
    EXPECT_LE(worst_serial, 2e-6) << nq << " queries, " << nk << " keys";
  }
}

TEST(FastKernels, AttentionWithBf16ProductsStaysWithinBf16Rounding) {
  if (!bf16_gemm_supported()) GTEST_SKIP() << "this CPU has no AVX512_BF16";
  // Rounding q and k (2^-9 relative each) moves a score by at most
  // delta = 2^-8 * scale * sum_d |q_d k_d|, which scales each softmax weight by a
  // factor within e^(+-2 delta); rounding the numerators and v adds 2^-8. With
  // |v| <= 1 every output is within (e^(2 delta) - 1) + 2^-8 of the exact one.
  for (auto [nq, nk] : {std::pair<int64_t, int64_t>{300, 257}, {1, 5}, {129, 1000}}) {
    const int64_t heads = 2, head_dim = 24, width = heads * head_dim;
    const Tensor qkv = random_tensor({std::max(nq, nk), 3 * width}, 32);
    AttentionArgs a = qkv_rows_attention(qkv, nq, nk, heads, head_dim, width);
    Tensor reference({nq, width}), exact({nq, width}), fast({nq, width}), serial({nq, width});
    a.out = reference.data();
    attention_reference(a);
    a.out = exact.data();
    attention(a);
    double delta = 0.0;
    for (int64_t i = 0; i < nq; ++i)
      for (int64_t j = 0; j < nk; ++j)
        for (int64_t h = 0; h < heads; ++h) {
          double sum = 0.0;
          for (int64_t d = 0; d < head_dim; ++d) {
            sum += std::fabs(a.q[i * a.ldq + h * head_dim + d] * a.k[j * a.ldk + h * head_dim + d]);
          }
          delta = std::max(delta, sum * a.scale / 256.0);
        }
    const double bound = std::expm1(2.0 * delta) + 1.0 / 256 + 1e-6;
    a.bf16_products = true;
    a.out = fast.data();
    attention(a);
    a.out = serial.data();
    attention_serial(a);
    double worst = 0.0, worst_serial = 0.0, moved = 0.0;
    for (int64_t i = 0; i < nq * width; ++i) {
      worst = std::max(worst, std::abs(double(fast[i]) - reference[i]));
      worst_serial = std::max(worst_serial, std::abs(double(serial[i]) - reference[i]));
      moved = std::max(moved, std::abs(double(fast[i]) - exact[i]));
    }
    EXPECT_LE(worst, bound) << nq << " queries, " << nk << " keys";
    EXPECT_LE(worst_serial, bound) << nq << " queries, " << nk << " keys";
    EXPECT_GT(moved, 0.0) << "the bf16 path was not taken";
  }
}

// windowed_attention against the unfused steps: partition (padding = the given
// token), optional max-pool of q, reference attention per window, unpartition.
Tensor unfused_windowed_attention(const Tensor& qkv, int64_t window, const float* pad, int64_t heads, bool q_pool) {
  const int64_t c = qkv.dim(2) / 3;
  const int64_t nwh = windows_along(qkv.dim(0), window), nww = windows_along(qkv.dim(1), window);
  Tensor windows({nwh * nww, window, window, 3 * c});
  window_partition_into(qkv, window, pad, windows);
  const int64_t qw = q_pool ? window / 2 : window;
  const Tensor pooled = q_pool ? max_pool2x2(windows, 0, c) : Tensor();
  Tensor attended({nwh * nww, qw, qw, c});
  for (int64_t n = 0; n < nwh * nww; ++n) {
    AttentionArgs a;
    a.nq = qw * qw;
    a.nk = window * window;
    a.heads = heads;
    a.head_dim = c / heads;
    a.q = q_pool ? pooled.data() + n * qw * qw * c : windows.data() + n * window * window * 3 * c;
    a.ldq = q_pool ? c : 3 * c;
    a.k = windows.data() + n * window * window * 3 * c + c;
    a.v = a.k + c;
    a.ldk = a.ldv = 3 * c;
    a.out = attended.data() + n * qw * qw * c;
    a.ldo = c;
    a.scale = 1.0f / std::sqrt(static_cast<float>(c / heads));
    attention_reference(a);
  }
  const int64_t oh = q_pool ? qkv.dim(0) / 2 : qkv.dim(0), ow = q_pool ? qkv.dim(1) / 2 : qkv.dim(1);
  return window_unpartition(attended, qw, oh, ow);
}

TEST(FastKernels, WindowedAttentionMatchesPartitionAttendUnpartition) {
  struct Case {
    int64_t h, w, window, heads;
    bool q_pool;
  };
  for (const Case& k : {Case{8, 8, 4, 1, false}, Case{10, 7, 4, 2, false}, Case{12, 12, 4, 2, true},
                        Case{9, 14, 6, 3, true}, Case{5, 5, 8, 1, false}}) {
    const int64_t c = 6 * k.heads;
    const Tensor qkv = random_tensor({k.h, k.w, 3 * c}, 21);
    const Tensor pad = random_tensor({3 * c}, 22);
    Tensor out({k.q_pool ? k.h / 2 : k.h, k.q_pool ? k.w / 2 : k.w, c});
    windowed_attention(qkv, k.window, pad.data(), k.heads, k.q_pool, out);
    const Tensor expected = unfused_windowed_attention(qkv, k.window, pad.data(), k.heads, k.q_pool);
    ASSERT_EQ(out.shape(), expected.shape());
    EXPECT_LE(max_abs_diff(out.data(), expected.data(), out.numel()), 2e-6)
        << k.h << "x" << k.w << " window " << k.window << (k.q_pool ? " pooled" : "");
  }
  const Tensor qkv = random_tensor({8, 8, 18}, 1);
  Tensor wrong({8, 8, 5});
  EXPECT_THROW(windowed_attention(qkv, 4, qkv.data(), 1, false, wrong), Error);
}

TEST(FastKernels, WindowPartitionPadsWithTheGivenToken) {
  // A 5 x 4 grid in 3 x 3 windows: padded at the bottom and at the right.
  const Tensor x = random_tensor({5, 4, 2}, 10);
  const float pad[2] = {7.0f, -7.0f};
  Tensor windows({4, 3, 3, 2});
  window_partition_into(x, 3, pad, windows);
  for (int64_t wy = 0; wy < 2; ++wy)
    for (int64_t wx = 0; wx < 2; ++wx)
      for (int64_t y = 0; y < 3; ++y)
        for (int64_t xx = 0; xx < 3; ++xx)
          for (int64_t c = 0; c < 2; ++c) {
            const int64_t gy = wy * 3 + y, gx = wx * 3 + xx;
            const float expected = gy < 5 && gx < 4 ? x[(gy * 4 + gx) * 2 + c] : pad[c];
            EXPECT_EQ(windows[((((wy * 2 + wx) * 3 + y) * 3 + xx) * 2) + c], expected);
          }
  Tensor back({5, 4, 2});
  window_unpartition_into(windows, 3, 5, 4, back);
  EXPECT_EQ(max_abs_diff(back.data(), x.data(), x.numel()), 0.0);
  EXPECT_THROW(window_partition_into(x, 2, pad, windows), Error);
}

TEST(FastKernels, AddUpsampledMatchesMaterialisedUpsampling) {
  const Tensor coarse = random_tensor({3, 4, 5}, 11);
  Tensor fine = random_tensor({6, 8, 5}, 12);
  Tensor expected = fine.clone();
  const Tensor up = upsample_nearest2x_hwc(coarse);
  for (int64_t i = 0; i < expected.numel(); ++i) expected[i] += up[i];
  add_upsampled_nearest2x_inplace(fine, coarse);
  EXPECT_EQ(max_abs_diff(fine.data(), expected.data(), fine.numel()), 0.0);
  Tensor wrong({5, 8, 5});
  EXPECT_THROW(add_upsampled_nearest2x_inplace(wrong, coarse), Error);
}

}  // namespace
}  // namespace sam2rt
