#include "kernels/elementwise.h"

#include "core/error.h"

namespace sam2rt {

void add_inplace(Tensor& x, const Tensor& y) {
  if (x.numel() != y.numel()) {
    throw Error("add: shapes " + shape_to_string(x.shape()) + " and " + shape_to_string(y.shape()) + " differ");
  }
  float* a = x.data();
  const float* b = y.data();
  const int64_t n = x.numel();
#pragma omp parallel for schedule(dynamic, 1 << 14) if (n > (1 << 16))
  for (int64_t i = 0; i < n; ++i) a[i] += b[i];
}

void add_channel_vector_inplace(Tensor& x, const Tensor& bias) {
  const int64_t c = bias.numel();
  if (x.rank() < 1 || x.dim(-1) != c) {
    throw Error("add_channel_vector: " + shape_to_string(x.shape()) + " does not end in " + std::to_string(c));
  }
  const int64_t tokens = x.numel() / c;
  float* a = x.data();
#pragma omp parallel for schedule(dynamic, 256) if (x.numel() > (1 << 16))
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t i = 0; i < c; ++i) a[t * c + i] += bias[i];
}

}  // namespace sam2rt
