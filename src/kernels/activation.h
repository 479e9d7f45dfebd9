#pragma once

#include "core/tensor.h"

namespace sam2rt {

// In place. GELU is the exact erf form (nn.GELU() default), as the goldens need.
void gelu_inplace(Tensor& x);
void relu_inplace(Tensor& x);
void sigmoid_inplace(Tensor& x);

}  // namespace sam2rt
