#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace sam2rt {

// F.interpolate(x, size=(out_h, out_w), mode="bicubic", align_corners=False) on
// NCHW [N, C, H, W], exactly as torch's upsample_bicubic2d: cubic convolution
// with A = -0.75, source coordinate (o + 0.5) * in / out - 0.5 NOT clamped at 0,
// the four taps clamped to the border, no antialiasing. Accumulates in double.
Tensor resize_bicubic(const Tensor& nchw, int64_t out_h, int64_t out_w);

// F.interpolate(x, scale_factor=2.0, mode="nearest") on a token-major map:
// [H, W, C] -> [2H, 2W, C], out[y, x] = in[y / 2, x / 2].
Tensor upsample_nearest2x_hwc(const Tensor& hwc);

// x += upsample_nearest2x_hwc(coarse) without materialising the upsampled map:
// x [2H, 2W, C], coarse [H, W, C].
void add_upsampled_nearest2x_inplace(Tensor& x, const Tensor& coarse);

}  // namespace sam2rt
