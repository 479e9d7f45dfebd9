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

// The same operations as layer_norm_row_portable, four doubles at a time: lane p
// of the accumulators is partial sum p, so the bits are identical.
__attribute__((target("avx2"))) void layer_norm_row_avx2(float* row, int64_t c, const float* weight,
                                                         const float* bias, double eps) {
  if (c % kPartials != 0) {
    layer_norm_row_portable(row, c, weight, bias, eps);
    return;
  }
  __m256d sum = _mm256_setzero_pd();
  for (int64_t i = 0; i < c; i += kPartials) sum = _mm256_add_pd(sum, _mm256_cvtps_pd(_mm_loadu_ps(row + i)));
  const double mean = total(sum) / static_cast<double>(c);
  const __m256d mean_v = _mm256_set1_pd(mean);
  __m256d squares = _mm256_setzero_pd();
  for (int64_t i = 0; i < c; i += kPartials) {
    const __m256d d = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(row + i)), mean_v);
    squares = _mm256_add_pd(squares, _mm256_mul_pd(d, d));
  }
  const double inv = 1.0 / std::sqrt(total(squares) / static_cast<double>(c) + eps);
  const __m256d inv_v = _mm256_set1_pd(inv);
  for (int64_t i = 0; i < c; i += kPartials) {
    const __m256d centered = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(row + i)), mean_v);
    const __m256d scaled = _mm256_mul_pd(_mm256_mul_pd(centered, inv_v), _mm256_cvtps_pd(_mm_loadu_ps(weight + i)));
    _mm_storeu_ps(row + i, _mm256_cvtpd_ps(_mm256_add_pd(scaled, _mm256_cvtps_pd(_mm_loadu_ps(bias + i)))));
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
  for (int64_t r = 0; r < rows; ++r) {
    float* row = x + r * c;
    if (y != nullptr) add_rows_inplace(row, y + r * c, c);
    if (has_avx2) {
      layer_norm_row_avx2(row, c, weight, bias, static_cast<double>(eps));
    } else {
      layer_norm_row_portable(row, c, weight, bias, static_cast<double>(eps));
    }
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
