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

// bilinear_resize of one [in_h, in_w] plane, handed out one output row at a
// time with the same float values, for callers that reduce each row at once
// instead of holding the whole upsampled plane.
class BilinearRows {
 public:
  BilinearRows(int64_t in_h, int64_t in_w, int64_t out_h, int64_t out_w);
  // Interpolates every source row of `plane` along x (kept until the next call).
  void set_plane(const float* plane);
  // Output row i (out_w values) of the current plane.
  void row(int64_t i, float* out) const;
  int64_t out_h() const { return out_h_; }
  int64_t out_w() const { return out_w_; }

 private:
  int64_t in_h_, in_w_, out_h_, out_w_;
  LinearTaps rows_, cols_;
  std::vector<float> along_x_;  // [in_h, out_w]
};

// F.interpolate(x, (out_h, out_w), mode="bilinear", align_corners=False) over the
// last two axes of x (any leading axes), float32 with PyTorch's CPU index and
// weight rules (source = max(in/out * (dst + 0.5) - 0.5, 0) in double, float
// weights, upper tap clamped to the border, row blend of the column blends), so
// it agrees with torch's CPU float32 result to a few ulp.
Tensor bilinear_resize(const Tensor& x, int64_t out_h, int64_t out_w);

// Direct per-pixel evaluation in double (same float ratio), the fast path is tested against.
Tensor bilinear_resize_reference(const Tensor& x, int64_t out_h, int64_t out_w);

}  // namespace sam2rt
