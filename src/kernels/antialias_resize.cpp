#include "kernels/antialias_resize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace sam2rt {

namespace {

// The taps of one output index along one axis: input indices first..first+weights.size()-1.
struct AxisTaps {
  std::vector<int64_t> first;
  std::vector<int64_t> count;
  std::vector<float> weights;  // `stride` per output index, zero-padded
  int64_t stride = 0;
};

float triangle(float x) {
  x = x < 0 ? -x : x;
  return x < 1.0f ? 1.0f - x : 0.0f;
}

// ATen's antialiased weights (upsample_bilinear2d_aa): center of output i in
// input coordinates, support scaled by the downscale factor, float32 throughout.
AxisTaps axis_taps(int64_t in_size, int64_t out_size) {
  const float scale = static_cast<float>(in_size) / static_cast<float>(out_size);
  const float support = scale >= 1.0f ? scale : 1.0f;
  const float inv_scale = scale >= 1.0f ? 1.0f / scale : 1.0f;
  AxisTaps taps;
  taps.stride = static_cast<int64_t>(std::ceil(support)) * 2 + 1;
  taps.first.resize(static_cast<size_t>(out_size));
  taps.count.resize(static_cast<size_t>(out_size));
  taps.weights.assign(static_cast<size_t>(out_size * taps.stride), 0.0f);
  for (int64_t i = 0; i < out_size; ++i) {
    const float center = scale * (static_cast<float>(i) + 0.5f);
    const int64_t first = std::max<int64_t>(static_cast<int64_t>(center - support + 0.5f), 0);
    const int64_t count = std::min<int64_t>(static_cast<int64_t>(center + support + 0.5f), in_size) - first;
    float* w = taps.weights.data() + i * taps.stride;
    float total = 0.0f;
    for (int64_t j = 0; j < count; ++j) {
      w[j] = triangle((static_cast<float>(j + first) - center + 0.5f) * inv_scale);
      total += w[j];
    }
    if (total != 0.0f) {
      for (int64_t j = 0; j < count; ++j) w[j] /= total;
    }
    taps.first[static_cast<size_t>(i)] = first;
    taps.count[static_cast<size_t>(i)] = count;
  }
  return taps;
}

void horizontal_pass(const float* src, int64_t rows, int64_t src_w, float* dst, int64_t dst_w) {
  const AxisTaps taps = axis_taps(src_w, dst_w);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = src + r * src_w;
    float* out = dst + r * dst_w;
    for (int64_t x = 0; x < dst_w; ++x) {
      const float* w = taps.weights.data() + x * taps.stride;
      const float* tap = in + taps.first[static_cast<size_t>(x)];
      float sum = tap[0] * w[0];
      for (int64_t j = 1; j < taps.count[static_cast<size_t>(x)]; ++j) sum += tap[j] * w[j];
      out[x] = sum;
    }
  }
}

void vertical_pass(const float* src, int64_t planes, int64_t src_h, int64_t width, float* dst, int64_t dst_h) {
  const AxisTaps taps = axis_taps(src_h, dst_h);
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t y = 0; y < dst_h; ++y) {
      const float* w = taps.weights.data() + y * taps.stride;
      const int64_t count = taps.count[static_cast<size_t>(y)];
      const float* in = src + (p * src_h + taps.first[static_cast<size_t>(y)]) * width;
      float* out = dst + (p * dst_h + y) * width;
      for (int64_t x = 0; x < width; ++x) {
        float sum = in[x] * w[0];
        for (int64_t j = 1; j < count; ++j) sum += in[j * width + x] * w[j];
        out[x] = sum;
      }
    }
  }
}

}  // namespace

void resize_bilinear_antialias(const float* src, int64_t planes, int src_w, int src_h, float* dst, int dst_w,
                               int dst_h) {
  if (src_w == dst_w && src_h == dst_h) {
    std::memcpy(dst, src, sizeof(float) * static_cast<size_t>(planes * src_w * src_h));
    return;
  }
  if (src_w == dst_w) {
    vertical_pass(src, planes, src_h, src_w, dst, dst_h);
    return;
  }
  if (src_h == dst_h) {
    horizontal_pass(src, planes * src_h, src_w, dst, dst_w);
    return;
  }
  std::vector<float> between(static_cast<size_t>(planes * src_h * dst_w));
  horizontal_pass(src, planes * src_h, src_w, between.data(), dst_w);
  vertical_pass(between.data(), planes, src_h, dst_w, dst, dst_h);
}

}  // namespace sam2rt
