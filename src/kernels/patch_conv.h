#pragma once

#include "core/tensor.h"

namespace sam2rt {

// nn.Conv2d with kernel_size == stride == k and no padding on NCHW input: every
// output pixel sees its own k x k patch (k = 1 is a pointwise conv). Used by the
// prompt encoder's mask_downscaling (2x2/s2, 2x2/s2, 1x1). Weight [Cout, Cin, k, k],
// bias [Cout] (may be empty). Input H and W must be multiples of k.
Tensor patch_conv(const Tensor& x, const Tensor& weight, const Tensor& bias);

// Plain loop (double accumulation) the fast path is tested against.
Tensor patch_conv_reference(const Tensor& x, const Tensor& weight, const Tensor& bias);

}  // namespace sam2rt
