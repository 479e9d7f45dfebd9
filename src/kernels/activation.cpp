#include "kernels/activation.h"

#include <cmath>

namespace sam2rt {

void gelu_inplace(Tensor& x) {
  float* p = x.data();
  const int64_t n = x.numel();
#pragma omp parallel for schedule(static) if (n > (1 << 15))
  for (int64_t i = 0; i < n; ++i) {
    const double v = p[i];
    p[i] = static_cast<float>(0.5 * v * (1.0 + std::erf(v * M_SQRT1_2)));
  }
}

void relu_inplace(Tensor& x) {
  for (float& v : x) v = v > 0.0f ? v : 0.0f;
}

void sigmoid_inplace(Tensor& x) {
  for (float& v : x) v = static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(v))));
}

}  // namespace sam2rt
