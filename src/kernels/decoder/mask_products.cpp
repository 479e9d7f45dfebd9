#include "kernels/decoder/mask_products.h"

#include <immintrin.h>

#include "kernels/gelu.h"
#include "kernels/gelu_float_avx512.h"
#include "kernels/simd_dispatch.h"

namespace sam2rt {

namespace {

constexpr int64_t kChannels = 32, kMaxMasks = 4, kPixels = 16;

// GCC 12's AVX-512 intrinsics start some results from an "undefined" vector,
// which it then reports as maybe-uninitialized once inlined.
#pragma GCC diagnostic push
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

// GELU((tap + bias) + skip) of 16 pixels of tap row t.
[[gnu::target("avx512f,avx512dq"), gnu::always_inline]] inline __m512 activated(const __m512* table,
                                                                                const UpscaledMaskProductsArgs& a,
                                                                                int64_t t, int64_t c, int64_t j) {
  const __m512 in = _mm512_add_ps(_mm512_add_ps(_mm512_loadu_ps(a.taps + t * a.ld_taps + j), _mm512_set1_ps(a.bias[c])),
                                  _mm512_loadu_ps(a.skip + t * a.w + j));
  return gelu_float_avx512::gelu_16_floats(table, in);
}

// 16 input pixels at a time, both taps dx of a row dy: 2 * Masks chains of
// multiply-adds over the channels, then each mask's two registers interleaved
// into the output row's 32 pixels.
template <int Masks>
[[gnu::target("avx512f,avx512dq")]] void upscaled_mask_products_avx512(const UpscaledMaskProductsArgs& a) {
  __m512 table[gelu_float_avx512::kTableRegisters];
  gelu_float_avx512::load_table(table);
  const __m512i even = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i odd = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  const float* const h = a.hyper;
  for (int64_t dy = 0; dy < 2; ++dy) {
    const int64_t first_tap = dy * 2 * kChannels;
    for (int64_t j = 0; j < a.w; j += kPixels) {
      __m512 acc[2][Masks];
      for (int64_t dx = 0; dx < 2; ++dx) {
        const __m512 g = activated(table, a, first_tap + dx * kChannels, 0, j);
        for (int m = 0; m < Masks; ++m) acc[dx][m] = _mm512_mul_ps(_mm512_set1_ps(h[m * kChannels]), g);
      }
      for (int64_t c = 1; c < kChannels; ++c)
        for (int64_t dx = 0; dx < 2; ++dx) {
          const __m512 g = activated(table, a, first_tap + dx * kChannels + c, c, j);
          for (int m = 0; m < Masks; ++m) {
            acc[dx][m] = _mm512_fmadd_ps(_mm512_set1_ps(h[m * kChannels + c]), g, acc[dx][m]);
          }
        }
      for (int m = 0; m < Masks; ++m) {
        float* const out = a.out + m * a.ldo + dy * 2 * a.w + 2 * j;
        _mm512_storeu_ps(out, _mm512_permutex2var_ps(acc[0][m], even, acc[1][m]));
        _mm512_storeu_ps(out + kPixels, _mm512_permutex2var_ps(acc[0][m], odd, acc[1][m]));
      }
    }
  }
}

#pragma GCC diagnostic pop

void upscaled_mask_products_fused_avx512(const UpscaledMaskProductsArgs& a) {
  if (a.cout != kChannels || a.w % kPixels != 0) return upscaled_mask_products_unfused(a);
  switch (a.masks) {
    case 1: return upscaled_mask_products_avx512<1>(a);
    case 2: return upscaled_mask_products_avx512<2>(a);
    case 3: return upscaled_mask_products_avx512<3>(a);
    case kMaxMasks: return upscaled_mask_products_avx512<kMaxMasks>(a);
    default: return upscaled_mask_products_unfused(a);
  }
}

// Only AVX-512 has a fused path; the other levels take the GELU a row at a time.
using UpscaledMaskProducts = void (*)(const UpscaledMaskProductsArgs&);
const KernelTable<UpscaledMaskProducts> kUpscaledMaskProducts{.baseline = upscaled_mask_products_unfused,
                                                              .avx512 = upscaled_mask_products_fused_avx512};

}  // namespace

void upscaled_mask_products(const UpscaledMaskProductsArgs& a) { kUpscaledMaskProducts.best()(a); }

void upscaled_mask_products_unfused(const UpscaledMaskProductsArgs& a) {
  float* const row = a.scratch;
  for (int64_t c = 0; c < a.cout; ++c)
    for (int64_t dy = 0; dy < 2; ++dy)
      for (int64_t dx = 0; dx < 2; ++dx) {
        const int64_t t = (dy * 2 + dx) * a.cout + c;
        for (int64_t j = 0; j < a.w; ++j) row[j] = (a.taps[t * a.ld_taps + j] + a.bias[c]) + a.skip[t * a.w + j];
        gelu_exact_inplace(row, a.w);
        for (int64_t m = 0; m < a.masks; ++m) {
          const float weight = a.hyper[m * a.cout + c];
          float* const out = a.out + m * a.ldo + dy * 2 * a.w + dx;
          for (int64_t j = 0; j < a.w; ++j) out[2 * j] = c == 0 ? weight * row[j] : out[2 * j] + weight * row[j];
        }
      }
}

void upscaled_mask_products_reference(const UpscaledMaskProductsArgs& a) {
  for (int64_t m = 0; m < a.masks; ++m)
    for (int64_t dy = 0; dy < 2; ++dy)
      for (int64_t x = 0; x < 2 * a.w; ++x) {
        const int64_t j = x / 2, dx = x % 2;
        double sum = 0;
        for (int64_t c = 0; c < a.cout; ++c) {
          const int64_t t = (dy * 2 + dx) * a.cout + c;
          const float in = (a.taps[t * a.ld_taps + j] + a.bias[c]) + a.skip[t * a.w + j];
          sum += static_cast<double>(a.hyper[m * a.cout + c]) * gelu_exact_reference(in);
        }
        a.out[m * a.ldo + dy * 2 * a.w + x] = static_cast<float>(sum);
      }
}

}  // namespace sam2rt
