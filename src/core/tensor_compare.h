#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace sam2rt {

// Fidelity of `actual` against `expected` (same element count), in double.
struct TensorDifference {
  double one_minus_cos = 0.0;
  double mean_abs_err = 0.0;
  double max_abs_err = 0.0;
};

TensorDifference compare_tensors(const Tensor& actual, const Tensor& expected);

// X[..., ::step, ::step] (start 0 on the last two axes), the goldens' `.dec{step}`.
Tensor decimate(const Tensor& x, int64_t step);

}  // namespace sam2rt
