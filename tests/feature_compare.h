#pragma once

// Golden comparisons for feature maps: 1 - cos and max |err| in double (from
// core/tensor_compare.h), failing outright when the shapes differ.
#include <cmath>

#include "core/tensor.h"
#include "core/tensor_compare.h"

namespace sam2rt::testing {

struct Agreement {
  double one_minus_cos = 1.0;
  double max_abs_err = INFINITY;
};

inline Agreement agreement(const Tensor& actual, const Tensor& expected) {
  if (actual.shape() != expected.shape()) return {};
  const TensorDifference d = compare_tensors(actual, expected);
  return {d.one_minus_cos, d.max_abs_err};
}

using sam2rt::decimate;

}  // namespace sam2rt::testing
