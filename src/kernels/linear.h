#pragma once

#include "core/tensor.h"

namespace sam2rt {

// y[..., out] = x[..., in] * W^T + b, W in PyTorch's [out, in] layout.
// The leading dimensions of x are kept; bias may be empty.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias);

}  // namespace sam2rt
