#include "kernels/bf16_gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>
#include <vector>

#include "kernels/simd_dispatch.h"


namespace sam2rt {

namespace {

constexpr int64_t kLanes = 16;
// Register tile: kRows rows of A times up to kVectors vectors of 16 columns
// (4 x 6 = 24 accumulators, 6 B vectors and a broadcast: 31 of 32 registers).
constexpr int kRows = 4;
constexpr int kVectors = 6;

// GCC 12's AVX-512 intrinsics start some results from an "undefined" vector,
// which it reports as maybe-uninitialized once inlined.
#pragma GCC diagnostic push
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

inline uint32_t pair_of(const uint16_t* row, int64_t p, int64_t k) {
  const uint32_t first = row[2 * p];
  const uint32_t second = 2 * p + 1 < k ? row[2 * p + 1] : 0u;
  return first | (second << 16);
}

template <int Rows, int Vectors>
[[gnu::target("avx512f,avx512bw,avx512bf16")]] void tile(const uint16_t* a, int64_t lda, int64_t k,
                                                         const uint16_t* packed_b, int64_t n_padded, int64_t n,
                                                         int64_t column, float* c, int64_t ldc) {
  __m512 acc[Rows][Vectors];
  for (int i = 0; i < Rows; ++i)
    for (int j = 0; j < Vectors; ++j) acc[i][j] = _mm512_setzero_ps();
  const int64_t full_pairs = k / 2, pairs = (k + 1) / 2;
  for (int64_t p = 0; p < pairs; ++p) {
    __m512bh b[Vectors];
    for (int j = 0; j < Vectors; ++j) {
      b[j] = (__m512bh)_mm512_loadu_si512(packed_b + (p * n_padded + column + j * kLanes) * 2);
    }
    for (int i = 0; i < Rows; ++i) {
      const uint16_t* row = a + i * lda;
      uint32_t word;
      if (p < full_pairs) {
        std::memcpy(&word, row + 2 * p, sizeof word);
      } else {
        word = pair_of(row, p, k);
      }
      const __m512bh broadcast = (__m512bh)_mm512_set1_epi32(static_cast<int>(word));
      for (int j = 0; j < Vectors; ++j) acc[i][j] = _mm512_dpbf16_ps(acc[i][j], broadcast, b[j]);
    }
  }
  for (int j = 0; j < Vectors; ++j) {
    const int64_t first = column + j * kLanes, valid = std::min<int64_t>(kLanes, n - first);
    const __mmask16 mask = static_cast<__mmask16>((1u << valid) - 1u);
    for (int i = 0; i < Rows; ++i) _mm512_mask_storeu_ps(c + i * ldc + first, mask, acc[i][j]);
  }
}

[[gnu::target("avx512f,avx512bw,avx512vl,avx512bf16")]] void round_to_bf16_avx512(const float* src, int64_t count,
                                                                       uint16_t* dst) {
  for (int64_t i = 0; i < count; i += kLanes) {
    const int64_t left = count - i;
    const __mmask16 lanes = left >= kLanes ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << left) - 1u);
    const __m256bh rounded = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(lanes, src + i));
    _mm256_mask_storeu_epi16(dst + i, lanes, (__m256i)rounded);
  }
}

#pragma GCC diagnostic pop

using TileFunction = void (*)(const uint16_t*, int64_t, int64_t, const uint16_t*, int64_t, int64_t, int64_t, float*,
                              int64_t);

template <int Rows, int... Vectors>
constexpr std::array<TileFunction, sizeof...(Vectors)> tiles_for_rows(std::integer_sequence<int, Vectors...>) {
  return {&tile<Rows, Vectors + 1>...};
}

// tile_table[rows - 1][vectors - 1]
const std::array<std::array<TileFunction, kVectors>, kRows> tile_table = {
    tiles_for_rows<1>(std::make_integer_sequence<int, kVectors>{}),
    tiles_for_rows<2>(std::make_integer_sequence<int, kVectors>{}),
    tiles_for_rows<3>(std::make_integer_sequence<int, kVectors>{}),
    tiles_for_rows<4>(std::make_integer_sequence<int, kVectors>{})};

}  // namespace

bool bf16_gemm_supported() {
  return cpu_has_avx512_bf16();
}

void round_to_bf16(const float* src, int64_t count, uint16_t* dst) { round_to_bf16_avx512(src, count, dst); }

int64_t bf16_pairs_padded_n(int64_t n) { return (n + kLanes - 1) / kLanes * kLanes; }

int64_t bf16_pairs_size(int64_t k, int64_t n) { return (k + 1) / 2 * bf16_pairs_padded_n(n) * 2; }

void pack_bf16_pairs(const float* b, int64_t ldb, int64_t k, int64_t n, uint16_t* packed) {
  const int64_t n_padded = bf16_pairs_padded_n(n), pairs = (k + 1) / 2;
  std::vector<uint16_t> first(static_cast<size_t>(n)), second(static_cast<size_t>(n), 0);
  for (int64_t p = 0; p < pairs; ++p) {
    uint16_t* out = packed + p * n_padded * 2;
    round_to_bf16(b + 2 * p * ldb, n, first.data());
    if (2 * p + 1 < k) {
      round_to_bf16(b + (2 * p + 1) * ldb, n, second.data());
    } else {
      std::fill(second.begin(), second.end(), static_cast<uint16_t>(0));
    }
    for (int64_t j = 0; j < n; ++j) {
      out[2 * j] = first[static_cast<size_t>(j)];
      out[2 * j + 1] = second[static_cast<size_t>(j)];
    }
    std::fill(out + 2 * n, out + 2 * n_padded, static_cast<uint16_t>(0));
  }
}

void pack_bf16_pairs_transposed(const float* bt, int64_t ldbt, int64_t k, int64_t n, uint16_t* packed) {
  const int64_t n_padded = bf16_pairs_padded_n(n), pairs = (k + 1) / 2;
  std::vector<uint16_t> row(static_cast<size_t>(2 * pairs), 0);
  for (int64_t j = 0; j < n; ++j) {
    round_to_bf16(bt + j * ldbt, k, row.data());
    for (int64_t p = 0; p < pairs; ++p) {
      uint16_t* out = packed + (p * n_padded + j) * 2;
      out[0] = row[static_cast<size_t>(2 * p)];
      out[1] = row[static_cast<size_t>(2 * p + 1)];
    }
  }
  for (int64_t p = 0; p < pairs; ++p) {
    uint16_t* out = packed + p * n_padded * 2;
    std::fill(out + 2 * n, out + 2 * n_padded, static_cast<uint16_t>(0));
  }
}

void gemm_bf16_packed(const uint16_t* a, int64_t lda, int64_t m, int64_t k, const uint16_t* packed_b, int64_t n,
                      float* c, int64_t ldc) {
  const int64_t n_padded = bf16_pairs_padded_n(n), vectors = n_padded / kLanes;
  for (int64_t r = 0; r < m; r += kRows) {
    const int64_t rows = std::min<int64_t>(kRows, m - r);
    for (int64_t v = 0; v < vectors; v += kVectors) {
      const int64_t count = std::min<int64_t>(kVectors, vectors - v);
      tile_table[static_cast<size_t>(rows - 1)][static_cast<size_t>(count - 1)](
          a + r * lda, lda, k, packed_b, n_padded, n, v * kLanes, c + r * ldc, ldc);
    }
  }
}

}  // namespace sam2rt
