#include "kernels/decoder_head_products.h"

#include <immintrin.h>

#include "kernels/gemm.h"
#include "kernels/simd.h"

namespace sam2rt {

namespace {

// The shape of every SAM 2.1 decoder: attention heads of 16 channels, and 8
// tokens per head for a one-point or box prompt (what segment-everything runs).
constexpr int64_t kFastHeadDim = 16, kFastPerHead = 8;

bool fits_fast_path(const HeadDotsArgs& a) {
  return a.head_dim == kFastHeadDim && a.per_head == kFastPerHead && a.heads % 2 == 0 &&
         best_simd_level() >= SimdLevel::avx512;
}

// Two heads per 16-lane register: lane (k, j) holds head (h + k)'s dot with its
// vector j. The vectors are transposed once so that one register holds their
// component d for both heads; the row's component d of each head is spread to
// its half by one permute. A GEMM per head (k = 16, n = 8) spends more time on
// its call and packing than on its 2048 products.
[[gnu::target("avx512f")]] void head_dots_two_heads_avx512(const HeadDotsArgs& a) {
  const int64_t pairs = a.heads / 2;
  // vt[p][d] = [vectors[2p, :, d], vectors[2p + 1, :, d]] as 16 lanes.
  alignas(64) float vt[32][kFastHeadDim][16];
  for (int64_t p = 0; p < pairs; ++p)
    for (int64_t d = 0; d < kFastHeadDim; ++d)
      for (int64_t lane = 0; lane < 16; ++lane) {
        const int64_t head = 2 * p + lane / kFastPerHead, j = lane % kFastPerHead;
        vt[p][d][lane] = a.vectors[(head * kFastPerHead + j) * kFastHeadDim + d];
      }
  __m512i spread[kFastHeadDim];
  for (int d = 0; d < kFastHeadDim; ++d) {
    spread[d] = _mm512_setr_epi32(d, d, d, d, d, d, d, d, 16 + d, 16 + d, 16 + d, 16 + d, 16 + d, 16 + d, 16 + d,
                                  16 + d);
  }
  for (int64_t i = 0; i < a.rows; ++i) {
    const float* x = a.x + i * a.ldx;
    float* out = a.out + i * a.ldo;
    for (int64_t p = 0; p < pairs; ++p) {
      const __m512 head0 = _mm512_loadu_ps(x + 2 * p * kFastHeadDim);
      const __m512 head1 = _mm512_loadu_ps(x + (2 * p + 1) * kFastHeadDim);
      __m512 acc = _mm512_mul_ps(_mm512_permutex2var_ps(head0, spread[0], head1), _mm512_load_ps(vt[p][0]));
      for (int d = 1; d < kFastHeadDim; ++d) {
        acc = _mm512_fmadd_ps(_mm512_permutex2var_ps(head0, spread[d], head1), _mm512_load_ps(vt[p][d]), acc);
      }
      _mm512_storeu_ps(out + 2 * p * kFastPerHead, acc);
    }
  }
}

}  // namespace

void head_dots(const HeadDotsArgs& a) {
  if (fits_fast_path(a) && a.heads <= 64) {
    head_dots_two_heads_avx512(a);
    return;
  }
  for (int64_t h = 0; h < a.heads; ++h) {
    gemm({.m = a.rows, .n = a.per_head, .k = a.head_dim, .a = a.x + h * a.head_dim, .lda = a.ldx,
          .b = a.vectors + h * a.per_head * a.head_dim, .ldb = a.head_dim, .b_transposed = true,
          .c = a.out + h * a.per_head, .ldc = a.ldo});
  }
}

void head_dots_reference(const HeadDotsArgs& a) {
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t h = 0; h < a.heads; ++h)
      for (int64_t j = 0; j < a.per_head; ++j) {
        const float* x = a.x + i * a.ldx + h * a.head_dim;
        const float* v = a.vectors + (h * a.per_head + j) * a.head_dim;
        double sum = 0;
        for (int64_t d = 0; d < a.head_dim; ++d) sum += static_cast<double>(x[d]) * v[d];
        a.out[i * a.ldo + h * a.per_head + j] = static_cast<float>(sum);
      }
}

}  // namespace sam2rt
