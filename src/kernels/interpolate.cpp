#include "kernels/interpolate.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/error.h"

namespace sam2rt {

namespace {

constexpr double kCubicA = -0.75;

// Keys' cubic convolution kernel for |x| <= 1 and 1 < |x| < 2 (torch's
// cubic_convolution1 / cubic_convolution2).
double cubic_near(double x) { return ((kCubicA + 2.0) * x - (kCubicA + 3.0)) * x * x + 1.0; }
double cubic_far(double x) { return ((kCubicA * x - 5.0 * kCubicA) * x + 8.0 * kCubicA) * x - 4.0 * kCubicA; }

struct CubicTaps {
  std::array<int64_t, 4> index;
  std::array<double, 4> weight;
};

std::vector<CubicTaps> cubic_taps(int64_t in, int64_t out) {
  std::vector<CubicTaps> taps(static_cast<size_t>(out));
  const double scale = static_cast<double>(in) / static_cast<double>(out);
  for (int64_t o = 0; o < out; ++o) {
    const double source = (static_cast<double>(o) + 0.5) * scale - 0.5;
    const double floor = std::floor(source);
    const double t = std::clamp(source - floor, 0.0, 1.0);
    CubicTaps& tap = taps[static_cast<size_t>(o)];
    tap.weight = {cubic_far(t + 1.0), cubic_near(t), cubic_near(1.0 - t), cubic_far(2.0 - t)};
    for (int64_t j = 0; j < 4; ++j) {
      tap.index[static_cast<size_t>(j)] = std::clamp(static_cast<int64_t>(floor) - 1 + j, int64_t{0}, in - 1);
    }
  }
  return taps;
}

}  // namespace

Tensor resize_bicubic(const Tensor& nchw, int64_t out_h, int64_t out_w) {
  if (nchw.rank() != 4) throw Error("resize_bicubic: expected NCHW, got " + shape_to_string(nchw.shape()));
  if (out_h < 1 || out_w < 1) throw Error("resize_bicubic: output size must be positive");
  const int64_t planes = nchw.dim(0) * nchw.dim(1), in_h = nchw.dim(2), in_w = nchw.dim(3);
  const std::vector<CubicTaps> rows = cubic_taps(in_h, out_h);
  const std::vector<CubicTaps> cols = cubic_taps(in_w, out_w);
  Tensor out({nchw.dim(0), nchw.dim(1), out_h, out_w});
#pragma omp parallel for schedule(static)
  for (int64_t p = 0; p < planes; ++p) {
    const float* src = nchw.data() + p * in_h * in_w;
    float* dst = out.data() + p * out_h * out_w;
    for (int64_t oy = 0; oy < out_h; ++oy) {
      const CubicTaps& ry = rows[static_cast<size_t>(oy)];
      for (int64_t ox = 0; ox < out_w; ++ox) {
        const CubicTaps& rx = cols[static_cast<size_t>(ox)];
        double sum = 0.0;
        for (size_t i = 0; i < 4; ++i) {
          const float* line = src + ry.index[i] * in_w;
          double along_x = 0.0;
          for (size_t j = 0; j < 4; ++j) along_x += rx.weight[j] * line[rx.index[j]];
          sum += ry.weight[i] * along_x;
        }
        dst[oy * out_w + ox] = static_cast<float>(sum);
      }
    }
  }
  return out;
}

BicubicRows::BicubicRows(const Tensor& nchw, int64_t out_h, int64_t out_w)
    : out_h_(out_h), out_w_(out_w) {
  if (nchw.rank() != 4 || nchw.dim(0) != 1) {
    throw Error("bicubic rows: expected [1, C, H, W], got " + shape_to_string(nchw.shape()));
  }
  if (out_h < 1 || out_w < 1) throw Error("bicubic rows: output size must be positive");
  channels_ = nchw.dim(1);
  const int64_t in_h = nchw.dim(2), in_w = nchw.dim(3);
  for (const CubicTaps& tap : cubic_taps(in_h, out_h)) {
    row_index_.push_back(tap.index);
    row_weight_.push_back(tap.weight);
  }
  const std::vector<CubicTaps> cols = cubic_taps(in_w, out_w);
  along_x_.resize(static_cast<size_t>(in_h * out_w * channels_));
  for (int64_t c = 0; c < channels_; ++c) {
    for (int64_t y = 0; y < in_h; ++y) {
      const float* line = nchw.data() + (c * in_h + y) * in_w;
      for (int64_t ox = 0; ox < out_w; ++ox) {
        const CubicTaps& rx = cols[static_cast<size_t>(ox)];
        double along_x = 0.0;
        for (size_t j = 0; j < 4; ++j) along_x += rx.weight[j] * line[rx.index[j]];
        along_x_[static_cast<size_t>((y * out_w + ox) * channels_ + c)] = along_x;
      }
    }
  }
}

void BicubicRows::row(int64_t y, float* out) const {
  const std::array<int64_t, 4>& index = row_index_[static_cast<size_t>(y)];
  const std::array<double, 4>& weight = row_weight_[static_cast<size_t>(y)];
  const int64_t n = out_w_ * channels_;
  const double* taps[4];
  for (size_t i = 0; i < 4; ++i) taps[i] = along_x_.data() + index[i] * n;
  // In chunks, so the double sums stay in L1.
  constexpr int64_t kChunk = 512;
  double sum[kChunk];
  for (int64_t start = 0; start < n; start += kChunk) {
    const int64_t count = std::min(kChunk, n - start);
    for (int64_t j = 0; j < count; ++j) sum[j] = 0.0;
    for (size_t i = 0; i < 4; ++i) {
      const double* along_x = taps[i] + start;
      for (int64_t j = 0; j < count; ++j) sum[j] += weight[i] * along_x[j];
    }
    for (int64_t j = 0; j < count; ++j) out[start + j] = static_cast<float>(sum[j]);
  }
}

Tensor upsample_nearest2x_hwc(const Tensor& hwc) {
  if (hwc.rank() != 3) throw Error("upsample_nearest2x: expected [H, W, C], got " + shape_to_string(hwc.shape()));
  const int64_t h = hwc.dim(0), w = hwc.dim(1), c = hwc.dim(2);
  Tensor out({2 * h, 2 * w, c});
  const size_t bytes = static_cast<size_t>(c) * sizeof(float);
#pragma omp parallel for schedule(dynamic, 4) if (out.numel() > (1 << 16))
  for (int64_t oy = 0; oy < 2 * h; ++oy) {
    for (int64_t ox = 0; ox < 2 * w; ++ox) {
      std::memcpy(out.data() + (oy * 2 * w + ox) * c, hwc.data() + ((oy / 2) * w + ox / 2) * c, bytes);
    }
  }
  return out;
}

void add_upsampled_nearest2x_inplace(Tensor& x, const Tensor& coarse) {
  if (coarse.rank() != 3 || x.rank() != 3 || x.dim(0) != 2 * coarse.dim(0) || x.dim(1) != 2 * coarse.dim(1) ||
      x.dim(2) != coarse.dim(2)) {
    throw Error("add_upsampled_nearest2x: " + shape_to_string(x.shape()) + " is not twice " +
                shape_to_string(coarse.shape()));
  }
  const int64_t h = x.dim(0), w = x.dim(1), c = x.dim(2), cw = coarse.dim(1);
#pragma omp parallel for schedule(dynamic, 4) if (x.numel() > (1 << 16))
  for (int64_t y = 0; y < h; ++y) {
    for (int64_t xx = 0; xx < w; ++xx) {
      float* dst = x.data() + (y * w + xx) * c;
      const float* src = coarse.data() + ((y / 2) * cw + xx / 2) * c;
      for (int64_t i = 0; i < c; ++i) dst[i] += src[i];
    }
  }
}

}  // namespace sam2rt
