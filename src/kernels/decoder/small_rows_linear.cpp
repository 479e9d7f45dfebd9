#include "kernels/decoder/small_rows_linear.h"

#include <immintrin.h>

#include <algorithm>
#include <type_traits>

#include "core/error.h"
#include "kernels/simd_dispatch.h"

namespace sam2rt {

namespace {

constexpr int64_t kMaxRows = 64;
// Rows per register block: 8 rows x 2 vectors of 16 columns = 16 accumulators.
constexpr int kAvx512RowBlock = 8;
constexpr int64_t kColumnBlock = kSmallRowsColumns;

// Rows [r0, r0 + Rows) times the column block starting at c0.
template <int Rows>
[[gnu::target("avx512f")]] void rows_block_avx512(const SmallRowsLinearArgs& a, int64_t r0, int64_t c0) {
  {
    const int64_t left = std::min(kColumnBlock, a.columns - c0);
    const __mmask16 mask0 = left >= 16 ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << left) - 1u);
    const __mmask16 mask1 =
        left >= 32 ? __mmask16(0xFFFF) : left <= 16 ? __mmask16(0) : static_cast<__mmask16>((1u << (left - 16)) - 1u);
    __m512 acc[Rows][2];
    for (int r = 0; r < Rows; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    const float* w = a.packed + c0 * a.in;
    const float* x = a.x + r0 * a.ldx;
    for (int64_t k = 0; k < a.in; ++k) {
      const __m512 w0 = _mm512_loadu_ps(w + k * kColumnBlock);
      const __m512 w1 = _mm512_loadu_ps(w + k * kColumnBlock + 16);
      for (int r = 0; r < Rows; ++r) {
        const __m512 xr = _mm512_set1_ps(x[r * a.ldx + k]);
        acc[r][0] = _mm512_fmadd_ps(xr, w0, acc[r][0]);
        acc[r][1] = _mm512_fmadd_ps(xr, w1, acc[r][1]);
      }
    }
    const __m512 b0 = _mm512_maskz_loadu_ps(mask0, a.bias + c0), b1 = _mm512_maskz_loadu_ps(mask1, a.bias + c0 + 16);
    for (int r = 0; r < Rows; ++r) {
      float* y = a.y + (r0 + r) * a.ldy + c0;
      _mm512_mask_storeu_ps(y, mask0, _mm512_add_ps(acc[r][0], b0));
      _mm512_mask_storeu_ps(y + 16, mask1, _mm512_add_ps(acc[r][1], b1));
    }
  }
}

// The AVX2 form: 2 rows x 4 vectors of 8 columns = 8 accumulators beside the
// block's 4 weight vectors (AVX2 has 16 registers). Each output's sum runs in the
// same order as the AVX-512 form's, so both give the same bits.
constexpr int kAvx2RowBlock = 2;

template <int Rows>
[[gnu::target("avx2,fma")]] void rows_block_avx2(const SmallRowsLinearArgs& a, int64_t r0, int64_t c0) {
  constexpr int kVectors = kColumnBlock / 8;
  const int64_t left = std::min(kColumnBlock, a.columns - c0);
  __m256 acc[Rows][kVectors];
  for (int r = 0; r < Rows; ++r)
    for (int v = 0; v < kVectors; ++v) acc[r][v] = _mm256_setzero_ps();
  const float* w = a.packed + c0 * a.in;
  const float* x = a.x + r0 * a.ldx;
  const int64_t in = a.in, ldx = a.ldx;
  for (int64_t k = 0; k < in; ++k) {
    for (int r = 0; r < Rows; ++r) {
      const __m256 xr = _mm256_broadcast_ss(x + r * ldx + k);
      for (int v = 0; v < kVectors; ++v) {
        acc[r][v] = _mm256_fmadd_ps(xr, _mm256_loadu_ps(w + k * kColumnBlock + 8 * v), acc[r][v]);
      }
    }
  }
  // A partial block (the last one when the outputs are not a multiple of 32)
  // goes through a buffer: masks for it would crowd the accumulators out of
  // registers in the loop above. Unrolled, so that acc is only ever indexed by
  // constants and stays in registers (indexed by a variable, GCC keeps a copy in
  // memory, stored at every step of the loop above).
#pragma GCC unroll 8
  for (int r = 0; r < Rows; ++r) {
    float* y = a.y + (r0 + r) * a.ldy + c0;
    if (left == kColumnBlock) {
      for (int v = 0; v < kVectors; ++v) {
        _mm256_storeu_ps(y + 8 * v, _mm256_add_ps(acc[r][v], _mm256_loadu_ps(a.bias + c0 + 8 * v)));
      }
    } else {
      alignas(32) float row[kColumnBlock];
      for (int v = 0; v < kVectors; ++v) _mm256_store_ps(row + 8 * v, acc[r][v]);
      for (int64_t j = 0; j < left; ++j) y[j] = row[j] + a.bias[c0 + j];
    }
  }
}

// block(std::integral_constant<int, n>) for n = rows, rows <= MaxRows: the
// register blocks are instantiated for each row count.
template <int MaxRows, class Block>
void rows_block_upto(int rows, Block block) {
  if constexpr (MaxRows > 1) {
    if (rows < MaxRows) {
      rows_block_upto<MaxRows - 1>(rows, block);
      return;
    }
  }
  block(std::integral_constant<int, MaxRows>{});
}

// Column blocks outside, row blocks inside: each block of the weight (32
// columns, 32 KB for in = 256) is read from memory once and serves every row
// from L1. The sum of each output is the same whatever the blocking.
template <int RowBlock, class Block>
void column_blocks_then_row_blocks(const SmallRowsLinearArgs& a, Block block) {
  for (int64_t c0 = 0; c0 < a.columns; c0 += kColumnBlock) {
    for (int64_t r0 = 0; r0 < a.rows; r0 += RowBlock) {
      const int rows = static_cast<int>(std::min<int64_t>(RowBlock, a.rows - r0));
      rows_block_upto<RowBlock>(rows, [&](auto n) { block(n, r0, c0); });
    }
  }
}

void small_rows_linear_avx2(const SmallRowsLinearArgs& a) {
  column_blocks_then_row_blocks<kAvx2RowBlock>(
      a, [&](auto n, int64_t r0, int64_t c0) { rows_block_avx2<decltype(n)::value>(a, r0, c0); });
}

void small_rows_linear_avx512(const SmallRowsLinearArgs& a) {
  column_blocks_then_row_blocks<kAvx512RowBlock>(
      a, [&](auto n, int64_t r0, int64_t c0) { rows_block_avx512<decltype(n)::value>(a, r0, c0); });
}

// No baseline entry: callers ask small_rows_linear_applies first.
using SmallRowsLinear = void (*)(const SmallRowsLinearArgs&);
const KernelTable<SmallRowsLinear> kSmallRowsLinear{.avx2 = small_rows_linear_avx2,
                                                    .avx512 = small_rows_linear_avx512};

}  // namespace

Tensor pack_small_rows_weight(const Tensor& weight) {
  const int64_t out = weight.dim(0), in = weight.dim(1), blocks = (out + kColumnBlock - 1) / kColumnBlock;
  Tensor packed({blocks, in, kColumnBlock});
  for (int64_t o = 0; o < out; ++o)
    for (int64_t k = 0; k < in; ++k) {
      packed[((o / kColumnBlock) * in + k) * kColumnBlock + o % kColumnBlock] = weight[o * in + k];
    }
  return packed;
}

bool small_rows_linear_applies(int64_t rows) {
  return kSmallRowsLinear.best() != nullptr && rows >= 1 && rows <= kMaxRows;
}

void small_rows_linear(const SmallRowsLinearArgs& a) { small_rows_linear(a, best_simd_level()); }

void small_rows_linear(const SmallRowsLinearArgs& a, SimdLevel level) {
  const SmallRowsLinear kernel = kSmallRowsLinear.at(level);
  if (kernel == nullptr) throw Error("small_rows_linear needs AVX2");
  kernel(a);
}

void small_rows_linear_reference(const SmallRowsLinearArgs& a) {
  for (int64_t r = 0; r < a.rows; ++r)
    for (int64_t j = 0; j < a.columns; ++j) {
      double sum = a.bias[j];
      const float* w = a.packed + (j / kColumnBlock) * a.in * kColumnBlock + j % kColumnBlock;
      for (int64_t k = 0; k < a.in; ++k) sum += static_cast<double>(a.x[r * a.ldx + k]) * w[k * kColumnBlock];
      a.y[r * a.ldy + j] = static_cast<float>(sum);
    }
}

}  // namespace sam2rt
