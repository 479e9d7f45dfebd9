#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "kernels/buffer_pool.h"

namespace sam2rt {

// nn.Conv2d on one image: input [1, Cin, H, W] (NCHW), weight [Cout, Cin, kh, kw],
// bias [Cout] (may be empty), zero padding on all sides. The output is token-major
// [OH, OW, Cout], the layout the Hiera trunk works in (im2col + one GEMM).
// With a pool, the scratch and the result come from it.
Tensor conv2d_to_hwc(const Tensor& input, const Tensor& weight, const Tensor& bias, int64_t stride,
                     int64_t padding, BufferPool* pool = nullptr);

// A 1x1 nn.Conv2d (weight [Cout, Cin, 1, 1]) on a token-major map [H, W, Cin] -> [H, W, Cout]:
// per token it is a Linear layer with the weight viewed as [Cout, Cin].
Tensor conv1x1_hwc(const Tensor& x, const Tensor& weight, const Tensor& bias);

}  // namespace sam2rt
