#include "kernels/patch_conv.h"

#include <vector>

#include "core/error.h"
#include "kernels/gemm.h"

namespace sam2rt {

namespace {

void check_shapes(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  if (x.rank() != 4 || weight.rank() != 4 || weight.dim(1) != x.dim(1) || weight.dim(2) != weight.dim(3) ||
      x.dim(2) % weight.dim(2) != 0 || x.dim(3) % weight.dim(3) != 0 ||
      (!bias.empty() && bias.numel() != weight.dim(0))) {
    throw Error("patch_conv: input " + shape_to_string(x.shape()) + " does not match weight " +
                shape_to_string(weight.shape()));
  }
}

}  // namespace

Tensor patch_conv(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  check_shapes(x, weight, bias);
  const int64_t n = x.dim(0), cin = x.dim(1), h = x.dim(2), w = x.dim(3);
  const int64_t cout = weight.dim(0), k = weight.dim(2), ho = h / k, wo = w / k, pixels = ho * wo;
  const int64_t patch = cin * k * k;
  // Patches laid out [Cin*k*k, Ho*Wo] in the weight's (c, ky, kx) order: y[n] = W @ patches.
  std::vector<float> patches(static_cast<size_t>(patch * pixels));
  Tensor y({n, cout, ho, wo});
  for (int64_t b = 0; b < n; ++b) {
    const float* in = x.data() + b * cin * h * w;
    for (int64_t c = 0; c < cin; ++c)
      for (int64_t ky = 0; ky < k; ++ky)
        for (int64_t kx = 0; kx < k; ++kx) {
          float* row = patches.data() + ((c * k + ky) * k + kx) * pixels;
          for (int64_t i = 0; i < ho; ++i)
            for (int64_t j = 0; j < wo; ++j) row[i * wo + j] = in[(c * h + i * k + ky) * w + j * k + kx];
        }
    float* out = y.data() + b * cout * pixels;
    if (!bias.empty()) {
      for (int64_t o = 0; o < cout; ++o)
        for (int64_t p = 0; p < pixels; ++p) out[o * pixels + p] = bias[o];
    }
    gemm({.m = cout, .n = pixels, .k = patch, .a = weight.data(), .lda = patch, .b = patches.data(), .ldb = pixels,
          .b_transposed = false, .c = out, .ldc = pixels, .accumulate = !bias.empty()});
  }
  return y;
}

Tensor patch_conv_reference(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  check_shapes(x, weight, bias);
  const int64_t n = x.dim(0), cin = x.dim(1), h = x.dim(2), w = x.dim(3);
  const int64_t cout = weight.dim(0), k = weight.dim(2), ho = h / k, wo = w / k;
  Tensor y({n, cout, ho, wo});
  for (int64_t b = 0; b < n; ++b)
    for (int64_t o = 0; o < cout; ++o)
      for (int64_t i = 0; i < ho; ++i)
        for (int64_t j = 0; j < wo; ++j) {
          double sum = bias.empty() ? 0.0 : bias[o];
          for (int64_t c = 0; c < cin; ++c)
            for (int64_t ky = 0; ky < k; ++ky)
              for (int64_t kx = 0; kx < k; ++kx)
                sum += static_cast<double>(weight[((o * cin + c) * k + ky) * k + kx]) *
                       x[((b * cin + c) * h + i * k + ky) * w + j * k + kx];
          y[((b * cout + o) * ho + i) * wo + j] = static_cast<float>(sum);
        }
  return y;
}

}  // namespace sam2rt
