#include "kernels/activation.h"

#include <cmath>

#include "kernels/gelu.h"

namespace sam2rt {

void gelu_inplace(Tensor& x) { gelu_exact_inplace(x.data(), x.numel()); }

void relu_inplace(Tensor& x) {
  for (float& v : x) v = v > 0.0f ? v : 0.0f;
}

void sigmoid_inplace(Tensor& x) {
  for (float& v : x) v = static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(v))));
}

}  // namespace sam2rt
