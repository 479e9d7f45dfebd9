#pragma once

#include "core/tensor.h"

namespace sam2rt {

// x += y, element by element (same number of elements).
void add_inplace(Tensor& x, const Tensor& y);

// x[..., c] += bias[c]: a per-channel vector broadcast over every token of a
// token-major tensor (bias.numel() == x's last dimension).
void add_channel_vector_inplace(Tensor& x, const Tensor& bias);

}  // namespace sam2rt
