#include "kernels/decoder_rows.h"

#include <immintrin.h>

#include <algorithm>

#include "kernels/norm.h"
#include "kernels/simd.h"
#include "kernels/simd_dispatch.h"

// Vector helpers are inlined into per-ISA functions (simd.h): no ABI crossing.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace sam2rt {

namespace {

// The baseline build targets SSE2; eight floats at a time where the CPU allows.
// out may alias a or b.
__attribute__((target("avx2"))) void add_rows_avx2(const float* a, const float* b, int64_t count, float* out) {
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) _mm256_storeu_ps(out + i, _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
  for (; i < count; ++i) out[i] = a[i] + b[i];
}

// out = s * x + y over c floats: a product then a sum (no fused multiply-add),
// the same rounding as the plain loop.
__attribute__((target("avx2"))) void scale_add_avx2(float s, const float* x, const float* y, int64_t c, float* out) {
  const __m256 scale = _mm256_set1_ps(s);
  int64_t j = 0;
  for (; j + 8 <= c; j += 8) {
    _mm256_storeu_ps(out + j, _mm256_add_ps(_mm256_mul_ps(scale, _mm256_loadu_ps(x + j)), _mm256_loadu_ps(y + j)));
  }
  for (; j < c; ++j) out[j] = s * x[j] + y[j];
}

// The same with sixteen floats at a time (the scale-and-add passes stream the
// per-image arrays: half the instructions per byte).
__attribute__((target("avx512f"))) void scale_add_avx512(float s, const float* x, const float* y, int64_t c,
                                                         float* out) {
  const __m512 scale = _mm512_set1_ps(s);
  int64_t j = 0;
  for (; j + 16 <= c; j += 16) {
    _mm512_storeu_ps(out + j, _mm512_add_ps(_mm512_mul_ps(scale, _mm512_loadu_ps(x + j)), _mm512_loadu_ps(y + j)));
  }
  for (; j < c; ++j) out[j] = s * x[j] + y[j];
}

__attribute__((target("avx512f"))) void scale_avx512(float s, float* x, int64_t c) {
  const __m512 scale = _mm512_set1_ps(s);
  int64_t j = 0;
  for (; j + 16 <= c; j += 16) _mm512_storeu_ps(x + j, _mm512_mul_ps(scale, _mm512_loadu_ps(x + j)));
  for (; j < c; ++j) x[j] *= s;
}

__attribute__((target("avx2"))) void scale_avx2(float s, float* x, int64_t c) {
  const __m256 scale = _mm256_set1_ps(s);
  int64_t j = 0;
  for (; j + 8 <= c; j += 8) _mm256_storeu_ps(x + j, _mm256_mul_ps(scale, _mm256_loadu_ps(x + j)));
  for (; j < c; ++j) x[j] *= s;
}

void add_rows_plain(const float* a, const float* b, int64_t count, float* out) {
  for (int64_t i = 0; i < count; ++i) out[i] = a[i] + b[i];
}

void scale_add_plain(float s, const float* x, const float* y, int64_t c, float* out) {
  for (int64_t j = 0; j < c; ++j) out[j] = s * x[j] + y[j];
}

void scale_plain(float s, float* x, int64_t c) {
  for (int64_t j = 0; j < c; ++j) x[j] *= s;
}

using AddRows = void (*)(const float*, const float*, int64_t, float*);
const KernelTable<AddRows> kAddRows{.baseline = add_rows_plain, .avx2 = add_rows_avx2};

using ScaleAdd = void (*)(float, const float*, const float*, int64_t, float*);
const KernelTable<ScaleAdd> kScaleAdd{.baseline = scale_add_plain, .avx2 = scale_add_avx2, .avx512 = scale_add_avx512};

using Scale = void (*)(float, float*, int64_t);
const KernelTable<Scale> kScale{.baseline = scale_plain, .avx2 = scale_avx2, .avx512 = scale_avx512};

// dot_rows accumulates element j into lane j % kDotLanes, then adds the lanes
// by a fixed tree (sum_lanes): the same sums on every path, 16 independent
// additions per step instead of one dependent chain, and a reduction four
// additions deep. Products of floats are exact in double.
constexpr int64_t kDotLanes = 16;

// The eight sums l[m] + l[m + 8] of a first fold, folded on in halves (m + 4,
// then m + 2, then m + 1), in place: how the vector paths fold their registers.
double sum_halves(double* folded) {
  for (int64_t width = kDotLanes / 4; width >= 1; width /= 2)
    for (int64_t m = 0; m < width; ++m) folded[m] += folded[m + width];
  return folded[0];
}

// The 16 lanes folded in halves: l[m] + l[m + 8], then sum_halves.
double sum_lanes(const double* lanes) {
  double folded[kDotLanes / 2];
  for (int64_t m = 0; m < kDotLanes / 2; ++m) folded[m] = lanes[m] + lanes[m + kDotLanes / 2];
  return sum_halves(folded);
}

template <typename B>
double dot_row_plain(const float* a, const B* b, int64_t c) {
  double lanes[kDotLanes] = {};
  for (int64_t j = 0; j < c; ++j) lanes[j % kDotLanes] += static_cast<double>(a[j]) * static_cast<double>(b[j]);
  return sum_lanes(lanes);
}

__attribute__((target("avx2"))) inline __m256d four_doubles(const float* x) { return _mm256_cvtps_pd(_mm_loadu_ps(x)); }
__attribute__((target("avx2"))) inline __m256d four_doubles(const double* x) { return _mm256_loadu_pd(x); }

template <typename B>
__attribute__((target("avx2"))) double dot_row_avx2(const float* a, const B* b, int64_t c) {
  __m256d acc[4] = {_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd()};
  int64_t j = 0;
  for (; j + kDotLanes <= c; j += kDotLanes) {
    for (int k = 0; k < 4; ++k) {
      acc[k] = _mm256_add_pd(acc[k], _mm256_mul_pd(four_doubles(a + j + 4 * k), four_doubles(b + j + 4 * k)));
    }
  }
  double lanes[kDotLanes];
  for (int k = 0; k < 4; ++k) _mm256_storeu_pd(lanes + 4 * k, acc[k]);
  for (; j < c; ++j) lanes[j % kDotLanes] += static_cast<double>(a[j]) * static_cast<double>(b[j]);
  return sum_lanes(lanes);
}

// GCC 12's AVX-512 intrinsics start some results from an "undefined" vector,
// which it then reports as maybe-uninitialized once inlined.
#pragma GCC diagnostic push
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
__attribute__((target("avx512f,avx512vl"))) inline __m512d eight_doubles(const float* x, __mmask8 mask) {
  return _mm512_cvtps_pd(_mm256_maskz_loadu_ps(mask, x));
}
__attribute__((target("avx512f,avx512vl"))) inline __m512d eight_doubles(const double* x, __mmask8 mask) {
  return _mm512_maskz_loadu_pd(mask, x);
}

// Lanes 0-7 and 8-15 in two registers, folded into one as sum_lanes does; a
// tail adds zeros to the lanes past c.
template <typename B>
__attribute__((target("avx512f,avx512vl"))) double dot_row_avx512(const float* a, const B* b, int64_t c) {
  __m512d low = _mm512_setzero_pd(), high = _mm512_setzero_pd();
  for (int64_t j = 0; j < c; j += kDotLanes) {
    const int64_t left = c - j;
    const auto mask_low = static_cast<__mmask8>(left >= 8 ? 0xff : (1u << left) - 1);
    const auto mask_high = static_cast<__mmask8>(left >= 16 ? 0xff : left <= 8 ? 0 : (1u << (left - 8)) - 1);
    low = _mm512_add_pd(low, _mm512_mul_pd(eight_doubles(a + j, mask_low), eight_doubles(b + j, mask_low)));
    high = _mm512_add_pd(high,
                         _mm512_mul_pd(eight_doubles(a + j + 8, mask_high), eight_doubles(b + j + 8, mask_high)));
  }
  double folded[kDotLanes / 2];
  _mm512_storeu_pd(folded, _mm512_add_pd(low, high));
  return sum_halves(folded);
}
#pragma GCC diagnostic pop

// One run of scatter_2x2_taps: both dx taps of an input pixel and dy, adjacent in
// the taps and in the output row: out = (src + bias) + add over 2 x cout values,
// the same bias for each tap, either term optional.
template <int Lanes>
[[gnu::always_inline]] inline void scatter_run_body(const float* src, const float* bias, const float* add,
                                                    int64_t cout, float* out) {
  using V = typename simd::Types<Lanes>::F;
  for (int64_t dx = 0; dx < 2; ++dx, src += cout, out += cout, add = add != nullptr ? add + cout : nullptr) {
    int64_t k = 0;
    for (; k + Lanes <= cout; k += Lanes) {
      V v = simd::load<V>(src + k);
      if (bias != nullptr) v += simd::load<V>(bias + k);
      if (add != nullptr) v += simd::load<V>(add + k);
      simd::store(out + k, v);
    }
    for (; k < cout; ++k) {
      float v = src[k];
      if (bias != nullptr) v += bias[k];
      if (add != nullptr) v += add[k];
      out[k] = v;
    }
  }
}

using ScatterRun = void (*)(const float*, const float*, const float*, int64_t, float*);

[[gnu::target("avx512f")]] void scatter_run_avx512(const float* src, const float* bias, const float* add, int64_t cout,
                                                   float* out) {
  scatter_run_body<16>(src, bias, add, cout, out);
}

[[gnu::target("avx2")]] void scatter_run_avx2(const float* src, const float* bias, const float* add, int64_t cout,
                                              float* out) {
  scatter_run_body<8>(src, bias, add, cout, out);
}

void scatter_run_baseline(const float* src, const float* bias, const float* add, int64_t cout, float* out) {
  scatter_run_body<4>(src, bias, add, cout, out);
}

const KernelTable<ScatterRun> kScatterRun{
    .baseline = scatter_run_baseline, .avx2 = scatter_run_avx2, .avx512 = scatter_run_avx512};

}  // namespace

void add_layer_norm_rows(float* x, const float* y, int64_t rows, int64_t c, const float* weight, const float* bias,
                         float eps) {
  if (y != nullptr) add_rows_inplace(x, y, rows * c);
  layer_norm_rows(x, c, rows, c, weight, bias, eps, x, c);
}

void add_rows(const float* a, const float* b, int64_t count, float* out) { kAddRows.best()(a, b, count, out); }

void add_rows_inplace(float* x, const float* y, int64_t count) { add_rows(x, y, count, x); }

void scale_rows_add(const float* scale, const float* x, int64_t ldx, const float* y, int64_t ldy, int64_t rows,
                    int64_t c, float* out, int64_t ldo) {
  const ScaleAdd scale_add = kScaleAdd.best();
  for (int64_t r = 0; r < rows; ++r) scale_add(scale[r], x + r * ldx, y + r * ldy, c, out + r * ldo);
}

void scale_rows(const float* scale, float* x, int64_t ldx, int64_t rows, int64_t c) {
  const Scale scale_row = kScale.best();
  for (int64_t r = 0; r < rows; ++r) scale_row(scale[r], x + r * ldx, c);
}

namespace {

// Groups of 8: each loaded whole, rotated down a lane (its first to the top),
// scaled, and stored as 8 lanes at its place in the row, the top lane left for
// the next group to overwrite; the last group's 7 lanes are stored masked.
[[gnu::target("avx2")]] void scale_without_firsts_of_8_avx2(float s, const float* x, int64_t groups, float* out) {
  const __m256i rotate = _mm256_setr_epi32(1, 2, 3, 4, 5, 6, 7, 0);
  const __m256i seven = _mm256_setr_epi32(-1, -1, -1, -1, -1, -1, -1, 0);
  const __m256 scale = _mm256_set1_ps(s);
  for (int64_t g = 0; g < groups; ++g) {
    const __m256 v = _mm256_mul_ps(scale, _mm256_permutevar8x32_ps(_mm256_loadu_ps(x + g * 8), rotate));
    if (g + 1 < groups) {
      _mm256_storeu_ps(out + g * 7, v);
    } else {
      _mm256_maskstore_ps(out + g * 7, seven, v);
    }
  }
}

// Groups of 8 have a vector path from AVX2 on; other sizes take the plain loop.
using ScaleWithoutFirstsOf8 = void (*)(float, const float*, int64_t, float*);
const KernelTable<ScaleWithoutFirstsOf8> kScaleWithoutFirstsOf8{.avx2 = scale_without_firsts_of_8_avx2};

}  // namespace

void scale_rows_without_group_firsts(const float* scale, const float* x, int64_t ldx, int64_t rows, int64_t groups,
                                     int64_t group, float* out, int64_t ldo) {
  const ScaleWithoutFirstsOf8 of_8 = group == 8 ? kScaleWithoutFirstsOf8.best() : nullptr;
  for (int64_t r = 0; r < rows; ++r) {
    const float s = scale[r];
    const float* const xr = x + r * ldx;
    float* const o = out + r * ldo;
    if (of_8 != nullptr) {
      of_8(s, xr, groups, o);
      continue;
    }
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t j = 1; j < group; ++j) o[g * (group - 1) + j - 1] = s * xr[g * group + j];
  }
}

namespace {

template <typename B>
using DotRow = double (*)(const float*, const B*, int64_t);

template <typename B>
const KernelTable<DotRow<B>> kDotRow{
    .baseline = dot_row_plain<B>, .avx2 = dot_row_avx2<B>, .avx512 = dot_row_avx512<B>};

template <typename B>
void dot_rows_any(const float* a, int64_t lda, const B* b, int64_t ldb, int64_t rows, int64_t c, double* out) {
  const DotRow<B> dot_row = kDotRow<B>.best();
  for (int64_t r = 0; r < rows; ++r) out[r] = dot_row(a + r * lda, b + r * ldb, c);
}

}  // namespace

void dot_rows(const float* a, int64_t lda, const float* b, int64_t ldb, int64_t rows, int64_t c, double* out) {
  dot_rows_any(a, lda, b, ldb, rows, c, out);
}

void dot_rows_with(const float* a, int64_t lda, const double* v, int64_t rows, int64_t c, double* out) {
  dot_rows_any(a, lda, v, int64_t{0}, rows, c, out);
}

void center_rows(float* x, int64_t rows, int64_t c) {
  for (int64_t r = 0; r < rows; ++r) {
    float* xr = x + r * c;
    double sum = 0;
    for (int64_t j = 0; j < c; ++j) sum += xr[j];
    const auto mean = static_cast<float>(sum / static_cast<double>(c));
    for (int64_t j = 0; j < c; ++j) xr[j] -= mean;
  }
}

void scatter_2x2_taps(const float* taps, int64_t rows, int64_t w, int64_t cout, const float* bias, const float* add,
                      float* out) {
  const ScatterRun scatter = kScatterRun.best();
  // Input pixel (i, j) makes output pixels (2i+dy, 2j+dx): one run per input
  // pixel and dy.
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t dy = 0; dy < 2; ++dy) {
      const int64_t first = (2 * i + dy) * 2 * w * cout;
      for (int64_t j = 0; j < w; ++j) {
        const int64_t pixel = first + 2 * j * cout;
        scatter(taps + ((i * w + j) * 4 + dy * 2) * cout, bias, add != nullptr ? add + pixel : nullptr, cout,
                out + pixel);
      }
    }
}

}  // namespace sam2rt
