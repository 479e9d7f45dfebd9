#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace sam2rt {

// F.interpolate(x, size=(out_h, out_w), mode="bicubic", align_corners=False) on
// NCHW [N, C, H, W], exactly as torch's upsample_bicubic2d: cubic convolution
// with A = -0.75, source coordinate (o + 0.5) * in / out - 0.5 NOT clamped at 0,
// the four taps clamped to the border, no antialiasing. Accumulates in double.
Tensor resize_bicubic(const Tensor& nchw, int64_t out_h, int64_t out_w);

// resize_bicubic of one [1, C, h, w] map, channel-last and one output row at a
// time: the horizontal pass over the h source rows is done once at
// construction (h x out_w x C values, small), each output row then costs four
// weighted sums per value. Same arithmetic in the same order as resize_bicubic,
// so bit-identical to it; lets a large upsampled map be added on the fly
// instead of being stored.
class BicubicRows {
 public:
  BicubicRows(const Tensor& nchw, int64_t out_h, int64_t out_w);

  int64_t height() const { return out_h_; }
  int64_t width() const { return out_w_; }
  int64_t channels() const { return channels_; }

  // out[x * C + c] = resize_bicubic(map)[0, c, y, x] for x < width().
  void row(int64_t y, float* out) const;

 private:
  int64_t out_h_ = 0, out_w_ = 0, channels_ = 0;
  std::vector<std::array<int64_t, 4>> row_index_;  // per output row: the 4 source rows
  std::vector<std::array<double, 4>> row_weight_;
  std::vector<double> along_x_;  // [h, out_w, C]: every source row resized horizontally
};

// F.interpolate(x, scale_factor=2.0, mode="nearest") on a token-major map:
// [H, W, C] -> [2H, 2W, C], out[y, x] = in[y / 2, x / 2].
Tensor upsample_nearest2x_hwc(const Tensor& hwc);

// x += upsample_nearest2x_hwc(coarse) without materialising the upsampled map:
// x [2H, 2W, C], coarse [H, W, C].
void add_upsampled_nearest2x_inplace(Tensor& x, const Tensor& coarse);

}  // namespace sam2rt
