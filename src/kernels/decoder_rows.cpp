#include "kernels/decoder_rows.h"

#include <immintrin.h>

#include <cmath>

namespace sam2rt {

namespace {

// Sums in double over four interleaved partial sums: the rounding is that of
// double accumulation (far below float resolution), without one long chain of
// dependent additions per row.
constexpr int kPartials = 4;

double sum_of(const float* x, int64_t c) {
  double partial[kPartials] = {};
  int64_t i = 0;
  for (; i + kPartials <= c; i += kPartials)
    for (int p = 0; p < kPartials; ++p) partial[p] += x[i + p];
  for (; i < c; ++i) partial[0] += x[i];
  return (partial[0] + partial[1]) + (partial[2] + partial[3]);
}

double squared_deviation(const float* x, int64_t c, double mean) {
  double partial[kPartials] = {};
  int64_t i = 0;
  for (; i + kPartials <= c; i += kPartials)
    for (int p = 0; p < kPartials; ++p) {
      const double d = x[i + p] - mean;
      partial[p] += d * d;
    }
  for (; i < c; ++i) {
    const double d = x[i] - mean;
    partial[0] += d * d;
  }
  return (partial[0] + partial[1]) + (partial[2] + partial[3]);
}

void layer_norm_row_portable(float* row, int64_t c, const float* weight, const float* bias, double eps) {
  const double mean = sum_of(row, c) / static_cast<double>(c);
  const double inv = 1.0 / std::sqrt(squared_deviation(row, c, mean) / static_cast<double>(c) + eps);
  for (int64_t i = 0; i < c; ++i) row[i] = static_cast<float>((row[i] - mean) * inv * weight[i] + bias[i]);
}

__attribute__((target("avx2"))) double total(__m256d partial) {
  double p[kPartials];
  _mm256_storeu_pd(p, partial);
  return (p[0] + p[1]) + (p[2] + p[3]);
}

// The same operations as layer_norm_row_portable (with the add fused into the
// first pass), four doubles at a time: lane p of the accumulators is partial sum
// p, so the bits are identical. Two rows go together so that their dependent
// accumulation chains overlap. Needs c % 4 == 0; y may be null.
__attribute__((target("avx2"))) void layer_norm_row_pair_avx2(float* row0, float* row1, const float* y0,
                                                              const float* y1, int64_t c, const float* weight,
                                                              const float* bias, double eps) {
  __m256d sum0 = _mm256_setzero_pd(), sum1 = _mm256_setzero_pd();
  for (int64_t i = 0; i < c; i += kPartials) {
    __m128 v0 = _mm_loadu_ps(row0 + i), v1 = _mm_loadu_ps(row1 + i);
    if (y0 != nullptr) {
      v0 = _mm_add_ps(v0, _mm_loadu_ps(y0 + i));
      v1 = _mm_add_ps(v1, _mm_loadu_ps(y1 + i));
      _mm_storeu_ps(row0 + i, v0);
      _mm_storeu_ps(row1 + i, v1);
    }
    sum0 = _mm256_add_pd(sum0, _mm256_cvtps_pd(v0));
    sum1 = _mm256_add_pd(sum1, _mm256_cvtps_pd(v1));
  }
  const __m256d mean0 = _mm256_set1_pd(total(sum0) / static_cast<double>(c));
  const __m256d mean1 = _mm256_set1_pd(total(sum1) / static_cast<double>(c));
  __m256d squares0 = _mm256_setzero_pd(), squares1 = _mm256_setzero_pd();
  for (int64_t i = 0; i < c; i += kPartials) {
    const __m256d d0 = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(row0 + i)), mean0);
    const __m256d d1 = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(row1 + i)), mean1);
    squares0 = _mm256_add_pd(squares0, _mm256_mul_pd(d0, d0));
    squares1 = _mm256_add_pd(squares1, _mm256_mul_pd(d1, d1));
  }
  const __m256d inv0 = _mm256_set1_pd(1.0 / std::sqrt(total(squares0) / static_cast<double>(c) + eps));
  const __m256d inv1 = _mm256_set1_pd(1.0 / std::sqrt(total(squares1) / static_cast<double>(c) + eps));
  for (int64_t i = 0; i < c; i += kPartials) {
    const __m256d w = _mm256_cvtps_pd(_mm_loadu_ps(weight + i)), b = _mm256_cvtps_pd(_mm_loadu_ps(bias + i));
    const __m256d c0 = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(row0 + i)), mean0);
    const __m256d c1 = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(row1 + i)), mean1);
    _mm_storeu_ps(row0 + i, _mm256_cvtpd_ps(_mm256_add_pd(_mm256_mul_pd(_mm256_mul_pd(c0, inv0), w), b)));
    _mm_storeu_ps(row1 + i, _mm256_cvtpd_ps(_mm256_add_pd(_mm256_mul_pd(_mm256_mul_pd(c1, inv1), w), b)));
  }
}

// The baseline build targets SSE2; eight floats at a time where the CPU allows.
// out may alias a or b.
__attribute__((target("avx2"))) void add_rows_avx2(const float* a, const float* b, int64_t count, float* out) {
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) _mm256_storeu_ps(out + i, _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
  for (; i < count; ++i) out[i] = a[i] + b[i];
}

}  // namespace

void add_layer_norm_rows(float* x, const float* y, int64_t rows, int64_t c, const float* weight, const float* bias,
                         float eps) {
  static const bool has_avx2 = __builtin_cpu_supports("avx2");
  int64_t r = 0;
  if (has_avx2 && c % kPartials == 0) {
    for (; r + 2 <= rows; r += 2) {
      layer_norm_row_pair_avx2(x + r * c, x + (r + 1) * c, y ? y + r * c : nullptr, y ? y + (r + 1) * c : nullptr, c,
                               weight, bias, static_cast<double>(eps));
    }
  }
  for (; r < rows; ++r) {
    float* row = x + r * c;
    if (y != nullptr) add_rows_inplace(row, y + r * c, c);
    layer_norm_row_portable(row, c, weight, bias, static_cast<double>(eps));
  }
}

void add_rows(const float* a, const float* b, int64_t count, float* out) {
  static const bool has_avx2 = __builtin_cpu_supports("avx2");
  if (has_avx2) {
    add_rows_avx2(a, b, count, out);
    return;
  }
  for (int64_t i = 0; i < count; ++i) out[i] = a[i] + b[i];
}

void add_rows_inplace(float* x, const float* y, int64_t count) { add_rows(x, y, count, x); }

}  // namespace sam2rt
