#pragma once

#include "core/tensor.h"

namespace sam2rt {

// nn.ConvTranspose2d(kernel_size=2, stride=2, padding=0) on NCHW input:
//   y[n, o, 2i+dy, 2j+dx] = b[o] + sum_c x[n, c, i, j] * w[c, o, dy, dx]
// weight in PyTorch's [Cin, Cout, 2, 2] layout, bias [Cout] (may be empty).
// Each output pixel has exactly one input pixel, so this is one GEMM plus a scatter.
Tensor conv_transpose_2x2_stride2(const Tensor& x, const Tensor& weight, const Tensor& bias);

// Plain loop (double accumulation) the fast path is tested against.
Tensor conv_transpose_2x2_stride2_reference(const Tensor& x, const Tensor& weight, const Tensor& bias);

}  // namespace sam2rt
