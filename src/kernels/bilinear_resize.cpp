#include "kernels/bilinear_resize.h"

#include <algorithm>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "core/error.h"

namespace sam2rt {

// PyTorch's compute_source_index_and_lambda (upsample_bilinear2d, align_corners=False):
// the ratio is float, the source index is evaluated in double (CPU acc_type) and the
// weights are stored as float.
LinearTaps linear_taps(int64_t in, int64_t out) {
  LinearTaps taps;
  taps.lo.resize(out);
  taps.hi.resize(out);
  taps.w_lo.resize(out);
  taps.w_hi.resize(out);
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  for (int64_t i = 0; i < out; ++i) {
    if (in == out) {
      taps.lo[i] = taps.hi[i] = i;
      taps.w_lo[i] = 1.0f;
      taps.w_hi[i] = 0.0f;
      continue;
    }
    const double source = std::max(static_cast<double>(scale) * (static_cast<double>(i) + 0.5) - 0.5, 0.0);
    const int64_t lo = static_cast<int64_t>(source);
    taps.lo[i] = lo;
    taps.hi[i] = lo + (lo < in - 1 ? 1 : 0);
    taps.w_hi[i] = static_cast<float>(std::clamp(source - static_cast<double>(lo), 0.0, 1.0));
    taps.w_lo[i] = static_cast<float>(1.0 - static_cast<double>(taps.w_hi[i]));
  }
  return taps;
}

namespace {

void check_args(const Tensor& x, int64_t out_h, int64_t out_w) {
  if (x.rank() < 2 || x.dim(-1) <= 0 || x.dim(-2) <= 0 || out_h <= 0 || out_w <= 0) {
    throw Error("bilinear_resize: cannot resize " + shape_to_string(x.shape()) + " to " + std::to_string(out_h) +
                "x" + std::to_string(out_w));
  }
}

Shape resized_shape(const Tensor& x, int64_t out_h, int64_t out_w) {
  Shape shape = x.shape();
  shape[shape.size() - 2] = out_h;
  shape[shape.size() - 1] = out_w;
  return shape;
}


}  // namespace

Tensor bilinear_resize(const Tensor& x, int64_t out_h, int64_t out_w) {
  check_args(x, out_h, out_w);
  Tensor y = Tensor::uninitialized(resized_shape(x, out_h, out_w));
  bilinear_resize(x, y);
  return y;
}

void bilinear_resize(const Tensor& x, Tensor& y) {
  const int64_t out_h = y.rank() >= 2 ? y.dim(-2) : 0, out_w = y.rank() >= 2 ? y.dim(-1) : 0;
  check_args(x, out_h, out_w);
  if (y.shape() != resized_shape(x, out_h, out_w)) {
    throw Error("bilinear_resize: cannot resize " + shape_to_string(x.shape()) + " into " + shape_to_string(y.shape()));
  }
  const int64_t in_h = x.dim(-2), in_w = x.dim(-1), planes = x.numel() / (in_h * in_w);
  const LinearTaps rows = linear_taps(in_h, out_h);
  const LinearTaps cols = linear_taps(in_w, out_w);
  // Separable: each source row is interpolated along x once (not once per output
  // row that reads it), then output rows blend two of those. The float operations
  // per output value are the same as blending the four taps directly.
  const std::unique_ptr<float[]> along_x(new float[static_cast<size_t>(planes * in_h * out_w)]);
  const bool parallel = planes * out_h * out_w > 65536;
#pragma omp parallel for collapse(2) schedule(static) if (parallel)
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t i = 0; i < in_h; ++i) {
      const float* src = x.data() + (p * in_h + i) * in_w;
      float* out = along_x.get() + (p * in_h + i) * out_w;
      for (int64_t j = 0; j < out_w; ++j) out[j] = src[cols.lo[j]] * cols.w_lo[j] + src[cols.hi[j]] * cols.w_hi[j];
    }
  }
#pragma omp parallel for collapse(2) schedule(static) if (parallel)
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t i = 0; i < out_h; ++i) {
      const float* upper = along_x.get() + (p * in_h + rows.lo[i]) * out_w;
      const float* lower = along_x.get() + (p * in_h + rows.hi[i]) * out_w;
      const float wt = rows.w_lo[i], wb = rows.w_hi[i];
      float* out = y.data() + (p * out_h + i) * out_w;
      for (int64_t j = 0; j < out_w; ++j) out[j] = upper[j] * wt + lower[j] * wb;
    }
  }
}

Tensor bilinear_resize_reference(const Tensor& x, int64_t out_h, int64_t out_w) {
  check_args(x, out_h, out_w);
  const int64_t in_h = x.dim(-2), in_w = x.dim(-1), planes = x.numel() / (in_h * in_w);
  Tensor y(resized_shape(x, out_h, out_w));
  // Sample position of output pixel i in input pixel units, clamped to the image.
  // The ratio is rounded to float as in PyTorch; that rounding is part of the definition.
  auto locate = [](int64_t i, int64_t in, int64_t out, int64_t& lo, int64_t& hi, double& frac) {
    const double ratio = static_cast<float>(in) / static_cast<float>(out);
    double s = (static_cast<double>(i) + 0.5) * ratio - 0.5;
    s = std::clamp(s, 0.0, static_cast<double>(in - 1));
    lo = static_cast<int64_t>(s);
    hi = std::min(lo + 1, in - 1);
    frac = s - static_cast<double>(lo);
  };
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t i = 0; i < out_h; ++i) {
      int64_t y0, y1;
      double fy;
      locate(i, in_h, out_h, y0, y1, fy);
      for (int64_t j = 0; j < out_w; ++j) {
        int64_t x0, x1;
        double fx;
        locate(j, in_w, out_w, x0, x1, fx);
        const float* plane = x.data() + p * in_h * in_w;
        const double v = (1 - fy) * ((1 - fx) * plane[y0 * in_w + x0] + fx * plane[y0 * in_w + x1]) +
                         fy * ((1 - fx) * plane[y1 * in_w + x0] + fx * plane[y1 * in_w + x1]);
        y[(p * out_h + i) * out_w + j] = static_cast<float>(v);
      }
    }
  return y;
}

}  // namespace sam2rt
