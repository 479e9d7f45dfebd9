#include "kernels/decoder/column_softmax_blocks.h"

#include <algorithm>
#include <cmath>

#include "kernels/simd.h"
#include "kernels/simd_dispatch.h"

// Vector helpers are always inlined into functions of their own ISA (simd.h).
#pragma GCC diagnostic ignored "-Wpsabi"

namespace sam2rt {

namespace {

// Columns [first, first + Blocks * Lanes) of x, walked a row at a time: the
// blocks' chains of max and sum run side by side, and each pass reads whole
// rows instead of one cache line of every row per block.
template <int Lanes, int Blocks>
[[gnu::always_inline]] inline void exp_column_lanes(float* x, int64_t rows, int64_t ld, int64_t first, float* max_out,
                                                    float* sum_out) {
  using V = typename simd::Types<Lanes>::F;
  float* const top = x + first;
  V max[Blocks], sum[Blocks];
  for (int b = 0; b < Blocks; ++b) max[b] = simd::load<V>(top + b * Lanes);
  for (int64_t r = 1; r < rows; ++r)
    for (int b = 0; b < Blocks; ++b) max[b] = simd::max(max[b], simd::load<V>(top + r * ld + b * Lanes));
  for (int b = 0; b < Blocks; ++b) sum[b] = simd::splat<V>(0.0f);
  for (int64_t r = 0; r < rows; ++r)
    for (int b = 0; b < Blocks; ++b) {
      const V e = simd::exp_fused(simd::load<V>(top + r * ld + b * Lanes) - max[b]);
      simd::store(top + r * ld + b * Lanes, e);
      sum[b] += e;
    }
  for (int b = 0; b < Blocks; ++b) {
    simd::store(max_out + first + b * Lanes, max[b]);
    simd::store(sum_out + first + b * Lanes, sum[b]);
  }
}

template <int Lanes>
[[gnu::always_inline]] inline void exp_column_block_body(float* x, int64_t rows, int64_t cols, int64_t ld,
                                                         float* max, float* sum) {
  constexpr int kBlocks = 4;
  int64_t c = 0;
  for (; c + kBlocks * Lanes <= cols; c += kBlocks * Lanes) exp_column_lanes<Lanes, kBlocks>(x, rows, ld, c, max, sum);
  for (; c + Lanes <= cols; c += Lanes) exp_column_lanes<Lanes, 1>(x, rows, ld, c, max, sum);
  // A prompt's 8 (or 40) columns: the last 8 in half-width vectors, whose exp
  // rounds as the full width's, not one column at a time.
  if constexpr (Lanes == 16) {
    for (; c + 8 <= cols; c += 8) exp_column_lanes<8, 1>(x, rows, ld, c, max, sum);
  }
  for (; c < cols; ++c) exp_column_lanes<1, 1>(x, rows, ld, c, max, sum);
}

[[gnu::target("avx512f,avx2,fma"), gnu::flatten]] void exp_column_block_avx512(float* x, int64_t rows, int64_t cols,
                                                                                int64_t ld, float* max, float* sum) {
  exp_column_block_body<16>(x, rows, cols, ld, max, sum);
}

[[gnu::target("avx2,fma"), gnu::flatten]] void exp_column_block_avx2(float* x, int64_t rows, int64_t cols, int64_t ld,
                                                                     float* max, float* sum) {
  exp_column_block_body<8>(x, rows, cols, ld, max, sum);
}

void exp_column_block_baseline(float* x, int64_t rows, int64_t cols, int64_t ld, float* max, float* sum) {
  exp_column_block_body<4>(x, rows, cols, ld, max, sum);
}

using ExpColumnBlock = void (*)(float*, int64_t, int64_t, int64_t, float*, float*);
const KernelTable<ExpColumnBlock> kExpColumnBlock{
    .baseline = exp_column_block_baseline, .avx2 = exp_column_block_avx2, .avx512 = exp_column_block_avx512};

}  // namespace

void exp_column_block(float* x, int64_t rows, int64_t cols, int64_t ld, float* max, float* sum) {
  if (rows <= 0 || cols <= 0) return;
  kExpColumnBlock.best()(x, rows, cols, ld, max, sum);
}

void exp_column_block_reference(float* x, int64_t rows, int64_t cols, int64_t ld, float* max, float* sum) {
  for (int64_t c = 0; c < cols; ++c) {
    float m = x[c];
    for (int64_t r = 1; r < rows; ++r) m = std::max(m, x[r * ld + c]);
    double s = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const double e = std::exp(static_cast<double>(x[r * ld + c]) - m);
      x[r * ld + c] = static_cast<float>(e);
      s += e;
    }
    max[c] = m;
    sum[c] = static_cast<float>(s);
  }
}

void column_block_scales(const float* max, const float* sum, int64_t blocks, int64_t cols, float* scale) {
  for (int64_t c = 0; c < cols; ++c) {
    float overall = max[c];
    for (int64_t b = 1; b < blocks; ++b) overall = std::max(overall, max[b * cols + c]);
    float total = 0;
    for (int64_t b = 0; b < blocks; ++b) {
      scale[b * cols + c] = std::exp(max[b * cols + c] - overall);
      total += scale[b * cols + c] * sum[b * cols + c];
    }
    for (int64_t b = 0; b < blocks; ++b) scale[b * cols + c] /= total;
  }
}

}  // namespace sam2rt
