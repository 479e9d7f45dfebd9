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

}  // namespace sam2rt
