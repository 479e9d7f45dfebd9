#include "kernels/decoder_rows.h"

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

}  // namespace

void add_layer_norm_rows(float* x, const float* y, int64_t rows, int64_t c, const float* weight, const float* bias,
                         float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = x + r * c;
    if (y != nullptr) add_rows_inplace(row, y + r * c, c);
    const double mean = sum_of(row, c) / static_cast<double>(c);
    const double inv = 1.0 / std::sqrt(squared_deviation(row, c, mean) / static_cast<double>(c) + static_cast<double>(eps));
    for (int64_t i = 0; i < c; ++i) row[i] = static_cast<float>((row[i] - mean) * inv * weight[i] + bias[i]);
  }
}

void add_rows(const float* a, const float* b, int64_t count, float* out) {
  for (int64_t i = 0; i < count; ++i) out[i] = a[i] + b[i];
}

void add_rows_inplace(float* x, const float* y, int64_t count) {
  for (int64_t i = 0; i < count; ++i) x[i] += y[i];
}

}  // namespace sam2rt
