#include "kernels/conv_transpose.h"

#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/decoder_rows.h"
#include "kernels/gemm.h"

namespace sam2rt {

namespace {

void check_shapes(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  if (x.rank() != 4 || weight.rank() != 4 || weight.dim(2) != 2 || weight.dim(3) != 2 ||
      weight.dim(0) != x.dim(1) || (!bias.empty() && bias.numel() != weight.dim(1))) {
    throw Error("conv_transpose_2x2_stride2: input " + shape_to_string(x.shape()) + " does not match weight " +
                shape_to_string(weight.shape()));
  }
}

}  // namespace

Tensor conv_transpose_2x2_stride2(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  check_shapes(x, weight, bias);
  const int64_t n = x.dim(0), cin = x.dim(1), h = x.dim(2), w = x.dim(3);
  const int64_t cout = weight.dim(1), hw = h * w, taps = cout * 4;
  // A = weight^T as [Cout*4, Cin] so that taps x pixels = A @ x[n] (x[n] is [Cin, H*W]).
  std::vector<float> weight_t(static_cast<size_t>(taps * cin));
  for (int64_t c = 0; c < cin; ++c)
    for (int64_t t = 0; t < taps; ++t) weight_t[t * cin + c] = weight[c * taps + t];
  std::vector<float> per_tap(static_cast<size_t>(taps * hw));
  Tensor y({n, cout, 2 * h, 2 * w});
  for (int64_t b = 0; b < n; ++b) {
    gemm({.m = taps, .n = hw, .k = cin, .a = weight_t.data(), .lda = cin, .b = x.data() + b * cin * hw,
          .ldb = hw, .b_transposed = false, .c = per_tap.data(), .ldc = hw});
    float* out = y.data() + b * cout * 4 * hw;
#pragma omp parallel for schedule(static) if (cout * hw > 65536)
    for (int64_t o = 0; o < cout; ++o) {
      const float bias_o = bias.empty() ? 0.0f : bias[o];
      for (int64_t dy = 0; dy < 2; ++dy) {
        for (int64_t dx = 0; dx < 2; ++dx) {
          const float* src = per_tap.data() + (o * 4 + dy * 2 + dx) * hw;
          for (int64_t i = 0; i < h; ++i) {
            float* row = out + (o * 2 * h + 2 * i + dy) * 2 * w + dx;
            for (int64_t j = 0; j < w; ++j) row[2 * j] = src[i * w + j] + bias_o;
          }
        }
      }
    }
  }
  return y;
}

Tensor pack_conv_transpose_2x2_taps(const Tensor& weight) {
  if (weight.rank() != 4 || weight.dim(2) != 2 || weight.dim(3) != 2) {
    throw Error("pack_conv_transpose_2x2_taps: weight " + shape_to_string(weight.shape()) + " is not [Cin, Cout, 2, 2]");
  }
  const int64_t cin = weight.dim(0), cout = weight.dim(1);
  Tensor taps({cin, 4 * cout});
  for (int64_t c = 0; c < cin; ++c)
    for (int64_t o = 0; o < cout; ++o)
      for (int64_t tap = 0; tap < 4; ++tap) taps[c * 4 * cout + tap * cout + o] = weight[(c * cout + o) * 4 + tap];
  return taps;
}

void conv_transpose_2x2_stride2_hwc(const float* x, int64_t rows, int64_t w, int64_t cin, const Tensor& weight_taps,
                                    const Tensor& bias, float* out, float* scratch, const float* add) {
  const int64_t row_taps = weight_taps.dim(1), cout = row_taps / 4;
  if (weight_taps.dim(0) != cin || row_taps % 4 != 0 || (!bias.empty() && bias.numel() != cout)) {
    throw Error("conv_transpose_2x2_stride2_hwc: " + std::to_string(cin) + " input channels do not match taps " +
                shape_to_string(weight_taps.shape()) + " / bias " + shape_to_string(bias.shape()));
  }
  // Every input pixel's four output pixels, taps [rows * W, 4 * Cout], then their places.
  gemm({.m = rows * w, .n = row_taps, .k = cin, .a = x, .lda = cin, .b = weight_taps.data(), .ldb = row_taps,
        .b_transposed = false, .c = scratch, .ldc = row_taps});
  scatter_2x2_taps(scratch, rows, w, cout, bias.empty() ? nullptr : bias.data(), add, out);
}

Tensor pack_conv_transpose_2x2_tap_rows(const Tensor& weight) {
  const Tensor taps = pack_conv_transpose_2x2_taps(weight);
  const int64_t cin = taps.dim(0), row_taps = taps.dim(1);
  Tensor rows({row_taps, cin});
  for (int64_t c = 0; c < cin; ++c)
    for (int64_t t = 0; t < row_taps; ++t) rows[t * cin + c] = taps[c * row_taps + t];
  return rows;
}

Tensor conv_transpose_2x2_stride2_reference(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  check_shapes(x, weight, bias);
  const int64_t n = x.dim(0), cin = x.dim(1), h = x.dim(2), w = x.dim(3), cout = weight.dim(1);
  Tensor y({n, cout, 2 * h, 2 * w});
  for (int64_t b = 0; b < n; ++b)
    for (int64_t o = 0; o < cout; ++o)
      for (int64_t oy = 0; oy < 2 * h; ++oy)
        for (int64_t ox = 0; ox < 2 * w; ++ox) {
          double sum = bias.empty() ? 0.0 : bias[o];
          for (int64_t c = 0; c < cin; ++c) {
            sum += static_cast<double>(x[((b * cin + c) * h + oy / 2) * w + ox / 2]) *
                   weight[((c * cout + o) * 2 + oy % 2) * 2 + ox % 2];
          }
          y[((b * cout + o) * 2 * h + oy) * 2 * w + ox] = static_cast<float>(sum);
        }
  return y;
}

}  // namespace sam2rt
