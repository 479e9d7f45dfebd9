#include "kernels/norm.h"

#include <cmath>

#include "core/error.h"

namespace sam2rt {

Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps) {
  const int64_t c = x.dim(-1);
  if (weight.numel() != c || bias.numel() != c) throw Error("layer_norm: weight size does not match input");
  const int64_t rows = x.numel() / c;
  Tensor y(x.shape());
#pragma omp parallel for schedule(static) if (rows > 256)
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = x.data() + r * c;
    float* out = y.data() + r * c;
    double sum = 0.0;
    for (int64_t i = 0; i < c; ++i) sum += in[i];
    const double mean = sum / static_cast<double>(c);
    double sq = 0.0;
    for (int64_t i = 0; i < c; ++i) {
      double d = in[i] - mean;
      sq += d * d;
    }
    const double inv = 1.0 / std::sqrt(sq / static_cast<double>(c) + static_cast<double>(eps));
    for (int64_t i = 0; i < c; ++i) {
      out[i] = static_cast<float>((in[i] - mean) * inv * weight[i] + bias[i]);
    }
  }
  return y;
}

Tensor layer_norm_2d(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps) {
  const int64_t n = x.dim(0), c = x.dim(1), hw = x.numel() / (n * c);
  if (weight.numel() != c || bias.numel() != c) throw Error("layer_norm_2d: weight size does not match input");
  Tensor y(x.shape());
  for (int64_t b = 0; b < n; ++b) {
    const float* in = x.data() + b * c * hw;
    float* out = y.data() + b * c * hw;
#pragma omp parallel for schedule(static) if (hw > 1024)
    for (int64_t p = 0; p < hw; ++p) {
      double sum = 0.0;
      for (int64_t i = 0; i < c; ++i) sum += in[i * hw + p];
      const double mean = sum / static_cast<double>(c);
      double sq = 0.0;
      for (int64_t i = 0; i < c; ++i) {
        double d = in[i * hw + p] - mean;
        sq += d * d;
      }
      const double inv = 1.0 / std::sqrt(sq / static_cast<double>(c) + static_cast<double>(eps));
      for (int64_t i = 0; i < c; ++i) {
        out[i * hw + p] = static_cast<float>((in[i * hw + p] - mean) * inv * weight[i] + bias[i]);
      }
    }
  }
  return y;
}

}  // namespace sam2rt
