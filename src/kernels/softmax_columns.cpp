#include "kernels/softmax_columns.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/simd.h"

// Vector helpers are always inlined into functions of their own ISA (simd.h).
#pragma GCC diagnostic ignored "-Wpsabi"

namespace sam2rt {

namespace {

// Columns [first, first + Blocks * Lanes) of x, walked a row at a time: the
// blocks' chains of max and sum run side by side, and each pass reads whole
// rows instead of one cache line of every row per block.
template <int Lanes, int Blocks>
[[gnu::always_inline]] inline void softmax_column_blocks(float* x, int64_t rows, int64_t ld, int64_t first) {
  using V = typename simd::Types<Lanes>::F;
  using VI = typename simd::Types<Lanes>::I;
  float* const top = x + first;
  V max[Blocks], sum[Blocks];
  for (int b = 0; b < Blocks; ++b) max[b] = simd::load<V>(top + b * Lanes);
  for (int64_t r = 1; r < rows; ++r)
    for (int b = 0; b < Blocks; ++b) max[b] = simd::max(max[b], simd::load<V>(top + r * ld + b * Lanes));
  for (int b = 0; b < Blocks; ++b) sum[b] = simd::splat<V>(0.0f);
  for (int64_t r = 0; r < rows; ++r)
    for (int b = 0; b < Blocks; ++b) {
      const V e = simd::exp<V, VI>(simd::load<V>(top + r * ld + b * Lanes) - max[b]);
      simd::store(top + r * ld + b * Lanes, e);
      sum[b] += e;
    }
  V inv[Blocks];
  for (int b = 0; b < Blocks; ++b) inv[b] = simd::splat<V>(1.0f) / sum[b];
  for (int64_t r = 0; r < rows; ++r)
    for (int b = 0; b < Blocks; ++b) {
      simd::store(top + r * ld + b * Lanes, simd::load<V>(top + r * ld + b * Lanes) * inv[b]);
    }
}

template <int Lanes>
[[gnu::always_inline]] inline void softmax_columns_body(float* x, int64_t rows, int64_t cols, int64_t ld) {
  constexpr int kBlocks = 4;
  int64_t c = 0;
  for (; c + kBlocks * Lanes <= cols; c += kBlocks * Lanes) softmax_column_blocks<Lanes, kBlocks>(x, rows, ld, c);
  for (; c + Lanes <= cols; c += Lanes) softmax_column_blocks<Lanes, 1>(x, rows, ld, c);
  for (; c < cols; ++c) softmax_column_blocks<1, 1>(x, rows, ld, c);
}

[[gnu::target("avx512f")]] void softmax_columns_avx512(float* x, int64_t rows, int64_t cols, int64_t ld) {
  softmax_columns_body<16>(x, rows, cols, ld);
}

[[gnu::target("avx2")]] void softmax_columns_avx2(float* x, int64_t rows, int64_t cols, int64_t ld) {
  softmax_columns_body<8>(x, rows, cols, ld);
}

void softmax_columns_baseline(float* x, int64_t rows, int64_t cols, int64_t ld) {
  softmax_columns_body<4>(x, rows, cols, ld);
}

}  // namespace

void softmax_columns(float* x, int64_t rows, int64_t cols, int64_t ld) {
  if (rows <= 0 || cols <= 0) return;
  switch (best_simd_level()) {
    case SimdLevel::avx512:
      softmax_columns_avx512(x, rows, cols, ld);
      return;
    case SimdLevel::avx2:
      softmax_columns_avx2(x, rows, cols, ld);
      return;
    case SimdLevel::baseline:
      softmax_columns_baseline(x, rows, cols, ld);
      return;
  }
}

void softmax_columns_reference(float* x, int64_t rows, int64_t cols, int64_t ld) {
  for (int64_t c = 0; c < cols; ++c) {
    double max = x[c];
    for (int64_t r = 1; r < rows; ++r) max = std::max(max, static_cast<double>(x[r * ld + c]));
    std::vector<double> e(static_cast<size_t>(rows));
    double sum = 0;
    for (int64_t r = 0; r < rows; ++r) sum += (e[static_cast<size_t>(r)] = std::exp(x[r * ld + c] - max));
    for (int64_t r = 0; r < rows; ++r) x[r * ld + c] = static_cast<float>(e[static_cast<size_t>(r)] / sum);
  }
}

}  // namespace sam2rt
