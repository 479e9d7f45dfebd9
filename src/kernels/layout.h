#pragma once

#include "core/tensor.h"

namespace sam2rt {

// Between the engine's token-major maps [H, W, C] (the official BHWC without B)
// and the NCHW [1, C, H, W] layout of the public outputs.
Tensor hwc_to_nchw(const Tensor& hwc);
Tensor nchw_to_hwc(const Tensor& nchw);
// hwc_to_nchw into a caller-provided [1, C, H, W] tensor (e.g. from a BufferPool).
void hwc_to_nchw_into(const Tensor& hwc, Tensor& nchw);
// nchw_to_hwc into a caller-provided tensor of C*H*W elements ([H, W, C] or [H*W, C]).
void nchw_to_hwc_into(const Tensor& nchw, Tensor& hwc);

// [1, C, 2H, 2W] as the planar taps of a 2x2, stride-2 ConvTranspose's output
// (kernels/mask_products.h): row i of the input grid's 4C tap rows
// t = (dy * 2 + dx) * C + c, each W wide,
//   taps[(i * 4C + t) * W + j] = nchw[c, 2i + dy, 2j + dx],
// into a caller-provided tensor of C*2H*2W elements.
void nchw_to_2x2_taps_into(const Tensor& nchw, Tensor& taps);

}  // namespace sam2rt
