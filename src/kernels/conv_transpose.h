#pragma once

#include "core/tensor.h"

namespace sam2rt {

// nn.ConvTranspose2d(kernel_size=2, stride=2, padding=0) on NCHW input:
//   y[n, o, 2i+dy, 2j+dx] = b[o] + sum_c x[n, c, i, j] * w[c, o, dy, dx]
// weight in PyTorch's [Cin, Cout, 2, 2] layout, bias [Cout] (may be empty).
// Each output pixel has exactly one input pixel, so this is one GEMM plus a scatter.
Tensor conv_transpose_2x2_stride2(const Tensor& x, const Tensor& weight, const Tensor& bias);

// The same layer on channels-last maps, for a band of input rows. weight_taps is
// the weight repacked by pack_conv_transpose_2x2_taps. x holds `rows` input rows of
// a W-wide map ([rows * W, Cin]); out receives the 2 * rows output rows they make
// ([2 * rows * 2W, Cout]), plus the same pixels of `add` when given (laid out as
// out: the skip connection of the mask decoder's upscaling, in the same pass).
// scratch: rows * W * 4 * Cout floats.
Tensor pack_conv_transpose_2x2_taps(const Tensor& weight);  // [Cin, Cout, 2, 2] -> [Cin, 4 * Cout], column (dy*2+dx)*Cout+o
void conv_transpose_2x2_stride2_hwc(const float* x, int64_t rows, int64_t w, int64_t cin, const Tensor& weight_taps,
                                    const Tensor& bias, float* out, float* scratch, const float* add = nullptr);
// The transpose of pack_conv_transpose_2x2_taps, [4 * Cout, Cin] with row
// (dy*2+dx)*Cout+o: for products that write planar taps, a row per tap and
// output channel (W^T x^T; kernels/mask_products.h).
Tensor pack_conv_transpose_2x2_tap_rows(const Tensor& weight);

// Plain loop (double accumulation) the fast path is tested against.
Tensor conv_transpose_2x2_stride2_reference(const Tensor& x, const Tensor& weight, const Tensor& bias);

}  // namespace sam2rt
