#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace sam2rt {

// The source taps of each output index along one axis (PyTorch's
// compute_source_index_and_lambda for align_corners=False).
struct LinearTaps {
  std::vector<int64_t> lo, hi;
  std::vector<float> w_lo, w_hi;
};
LinearTaps linear_taps(int64_t in, int64_t out);

// F.interpolate(x, (out_h, out_w), mode="bilinear", align_corners=False) over the
// last two axes of x (any leading axes), float32 with PyTorch's CPU index and
// weight rules (source = max(in/out * (dst + 0.5) - 0.5, 0) in double, float
// weights, upper tap clamped to the border, row blend of the column blends), so
// it agrees with torch's CPU float32 result to a few ulp.
Tensor bilinear_resize(const Tensor& x, int64_t out_h, int64_t out_w);
// The same into y (caller-allocated, e.g. from a pool): y's last two axes give the
// size, its leading axes must match x's.
void bilinear_resize(const Tensor& x, Tensor& y);

// Direct per-pixel evaluation in double (same float ratio), the fast path is tested against.
Tensor bilinear_resize_reference(const Tensor& x, int64_t out_h, int64_t out_w);

}  // namespace sam2rt
