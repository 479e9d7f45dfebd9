#include "kernels/mask_products.h"

#include <immintrin.h>

#include "kernels/decoder_gelu.h"
#include "kernels/decoder_rows.h"
#include "kernels/gelu_float_avx512.h"
#include "kernels/gemm.h"
#include "kernels/simd.h"

namespace sam2rt {

namespace {

constexpr int64_t kMasks = 4, kChannels = 32, kPixels = 4;

// GCC 12's AVX-512 shuffle and extract intrinsics start from an "undefined"
// vector, which it then reports as maybe-uninitialized once inlined.
#pragma GCC diagnostic push
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

// The 16 dots of four pixels with four masks: v[4 * q + m] holds pixel q times
// mask m in 16 lanes. Four levels of pairwise sums (128-bit lane shuffles, then
// in-lane shuffles) leave 128-bit lane m holding mask m's totals for pixels 0..3.
[[gnu::target("avx512f")]] inline __m512 sum_sixteen(const __m512 (&v)[16]) {
  __m512 halves[8], quarters[4], pairs[2];
  for (int i = 0; i < 8; ++i) {
    halves[i] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0x44),
                              _mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0xEE));
  }
  for (int i = 0; i < 4; ++i) {
    quarters[i] = _mm512_add_ps(_mm512_shuffle_f32x4(halves[2 * i], halves[2 * i + 1], 0x88),
                                _mm512_shuffle_f32x4(halves[2 * i], halves[2 * i + 1], 0xDD));
  }
  for (int i = 0; i < 2; ++i) {
    pairs[i] = _mm512_add_ps(_mm512_shuffle_ps(quarters[2 * i], quarters[2 * i + 1], 0x88),
                             _mm512_shuffle_ps(quarters[2 * i], quarters[2 * i + 1], 0xDD));
  }
  return _mm512_add_ps(_mm512_shuffle_ps(pairs[0], pairs[1], 0x88), _mm512_shuffle_ps(pairs[0], pairs[1], 0xDD));
}

// The masks' vectors in registers, channels 0-15 (lo) and 16-31 (hi); zero
// past `masks`.
struct MaskVectors {
  __m512 lo[kMasks], hi[kMasks];
};

[[gnu::target("avx512f"), gnu::always_inline]] inline MaskVectors load_mask_vectors(const float* hyper,
                                                                                    int64_t masks) {
  MaskVectors h;
  for (int64_t m = 0; m < kMasks; ++m) {
    h.lo[m] = m < masks ? _mm512_loadu_ps(hyper + m * kChannels) : _mm512_setzero_ps();
    h.hi[m] = m < masks ? _mm512_loadu_ps(hyper + m * kChannels + 16) : _mm512_setzero_ps();
  }
  return h;
}

// One pixel's products with every mask, its channels 0-15 in a and 16-31 in b:
// v[m] for mask m, as sum_sixteen takes them.
[[gnu::target("avx512f"), gnu::always_inline]] inline void pixel_products(const MaskVectors& h, __m512 a, __m512 b,
                                                                          __m512* v) {
  for (int m = 0; m < kMasks; ++m) v[m] = _mm512_fmadd_ps(h.hi[m], b, _mm512_mul_ps(h.lo[m], a));
}

// sum_sixteen's totals of four consecutive pixels to out[m * ldo + 0..3] for each mask.
[[gnu::target("avx512f"), gnu::always_inline]] inline void store_four_pixels(__m512 sums, int64_t masks, float* out,
                                                                             int64_t ldo) {
  _mm_storeu_ps(out, _mm512_extractf32x4_ps(sums, 0));
  if (masks > 1) _mm_storeu_ps(out + ldo, _mm512_extractf32x4_ps(sums, 1));
  if (masks > 2) _mm_storeu_ps(out + 2 * ldo, _mm512_extractf32x4_ps(sums, 2));
  if (masks > 3) _mm_storeu_ps(out + 3 * ldo, _mm512_extractf32x4_ps(sums, 3));
}

[[gnu::target("avx512f")]] void mask_products_avx512(const float* hyper, int64_t masks, const float* pixels,
                                                     int64_t count, float* out, int64_t ldo) {
  const MaskVectors h = load_mask_vectors(hyper, masks);
  int64_t p = 0;
  for (; p + kPixels <= count; p += kPixels) {
    __m512 v[16];
    for (int q = 0; q < kPixels; ++q) {
      const float* px = pixels + (p + q) * kChannels;
      pixel_products(h, _mm512_loadu_ps(px), _mm512_loadu_ps(px + 16), v + 4 * q);
    }
    store_four_pixels(sum_sixteen(v), masks, out + p, ldo);
  }
  for (; p < count; ++p)
    for (int64_t m = 0; m < masks; ++m) {
      float sum = 0;
      for (int64_t c = 0; c < kChannels; ++c) sum += hyper[m * kChannels + c] * pixels[p * kChannels + c];
      out[m * ldo + p] = sum;
    }
}

// upscaled_mask_products for cout = 32, masks <= 4 and an even w: four output
// pixels at a time (two input pixels' taps of one row dy), each pixel's tap,
// bias and skip added, its GELU and its products with the masks in registers,
// in mask_products_avx512's order.
[[gnu::target("avx512f,avx512dq")]] void upscaled_mask_products_avx512(const UpscaledMaskProductsArgs& a) {
  __m512 table[gelu_float_avx512::kTableRegisters];
  gelu_float_avx512::load_table(table);
  const MaskVectors h = load_mask_vectors(a.hyper, a.masks);
  const __m512 bias_lo = _mm512_loadu_ps(a.bias), bias_hi = _mm512_loadu_ps(a.bias + 16);
  const int64_t out_w = 2 * a.w, tap_stride = 4 * kChannels;
  for (int64_t dy = 0; dy < 2; ++dy) {
    const float* const taps_dy = a.taps + dy * 2 * kChannels;
    const float* const skip_dy = a.skip + dy * out_w * kChannels;
    float* const out_dy = a.out + dy * out_w;
    for (int64_t x = 0; x < out_w; x += kPixels) {
      __m512 v[16];
      for (int q = 0; q < kPixels; ++q) {
        // Output pixel x + q is input pixel (x + q) / 2's tap dx = (x + q) % 2.
        const float* src = taps_dy + (x / 2 + q / 2) * tap_stride + (q % 2) * kChannels;
        const float* skip = skip_dy + (x + q) * kChannels;
        const __m512 in_lo = gelu_float_avx512::gelu_16_floats(
            table, _mm512_add_ps(_mm512_add_ps(_mm512_loadu_ps(src), bias_lo), _mm512_loadu_ps(skip)));
        const __m512 in_hi = gelu_float_avx512::gelu_16_floats(
            table, _mm512_add_ps(_mm512_add_ps(_mm512_loadu_ps(src + 16), bias_hi), _mm512_loadu_ps(skip + 16)));
        pixel_products(h, in_lo, in_hi, v + 4 * q);
      }
      store_four_pixels(sum_sixteen(v), a.masks, out_dy + x, a.ldo);
    }
  }
}

#pragma GCC diagnostic pop

}  // namespace

void upscaled_mask_products(const UpscaledMaskProductsArgs& a) {
  static const bool has_avx512 = best_simd_level() >= SimdLevel::avx512;
  if (has_avx512 && a.cout == kChannels && a.masks >= 1 && a.masks <= kMasks && a.w % 2 == 0) {
    upscaled_mask_products_avx512(a);
    return;
  }
  upscaled_mask_products_unfused(a);
}

void upscaled_mask_products_unfused(const UpscaledMaskProductsArgs& a) {
  const int64_t pixels = 2 * 2 * a.w;
  scatter_2x2_taps(a.taps, 1, a.w, a.cout, a.bias, a.skip, a.scratch);
  gelu_exact_inplace(a.scratch, pixels * a.cout);
  mask_products(a.hyper, a.masks, a.cout, a.scratch, pixels, a.out, a.ldo);
}

void mask_products(const float* hyper, int64_t masks, int64_t channels, const float* pixels, int64_t count,
                   float* out, int64_t ldo) {
  static const bool has_avx512 = best_simd_level() >= SimdLevel::avx512;
  if (has_avx512 && channels == kChannels && masks <= kMasks) {
    mask_products_avx512(hyper, masks, pixels, count, out, ldo);
    return;
  }
  gemm({.m = masks, .n = count, .k = channels, .a = hyper, .lda = channels, .b = pixels, .ldb = channels,
        .b_transposed = true, .c = out, .ldc = ldo});
}

void mask_products_reference(const float* hyper, int64_t masks, int64_t channels, const float* pixels,
                             int64_t count, float* out, int64_t ldo) {
  for (int64_t m = 0; m < masks; ++m)
    for (int64_t p = 0; p < count; ++p) {
      double sum = 0;
      for (int64_t c = 0; c < channels; ++c) sum += static_cast<double>(hyper[m * channels + c]) * pixels[p * channels + c];
      out[m * ldo + p] = static_cast<float>(sum);
    }
}

}  // namespace sam2rt
