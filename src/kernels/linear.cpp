#include "kernels/linear.h"

#include "core/error.h"
#include "kernels/gemm.h"

namespace sam2rt {

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  const int64_t in = weight.dim(1);
  const int64_t out = weight.dim(0);
  if (x.dim(-1) != in) {
    throw Error("linear: input " + shape_to_string(x.shape()) + " does not match weight " +
                shape_to_string(weight.shape()));
  }
  const int64_t rows = x.numel() / in;
  Shape shape = x.shape();
  shape.back() = out;
  Tensor y(shape);
  if (!bias.empty()) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < out; ++j) y[r * out + j] = bias[j];
  }
  gemm({.m = rows, .n = out, .k = in, .a = x.data(), .lda = in, .b = weight.data(), .ldb = in,
        .b_transposed = true, .c = y.data(), .ldc = out, .accumulate = !bias.empty()});
  return y;
}

}  // namespace sam2rt
