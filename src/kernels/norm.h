#pragma once

#include "core/tensor.h"

namespace sam2rt {

// LayerNorm over the last axis (nn.LayerNorm): (x - mean) / sqrt(var + eps) * w + b,
// biased variance. Hiera uses eps 1e-6, the TwoWayTransformer 1e-5.
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps);

// LayerNorm2d over the channel axis of an NCHW tensor (SAM's LayerNorm2d), eps 1e-6.
Tensor layer_norm_2d(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps);

}  // namespace sam2rt
