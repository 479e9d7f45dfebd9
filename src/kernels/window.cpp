#include "kernels/window.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "core/error.h"

namespace sam2rt {

namespace {

void expect_shape(const Tensor& t, const Shape& shape, const char* what) {
  if (t.shape() != shape) {
    throw Error(std::string(what) + ": output is " + shape_to_string(t.shape()) + ", expected " +
                shape_to_string(shape));
  }
}

}  // namespace

int64_t windows_along(int64_t size, int64_t window) { return (size + window - 1) / window; }

void window_partition_into(const Tensor& hwc, int64_t window, const float* pad_token, Tensor& out) {
  if (hwc.rank() != 3) throw Error("window_partition: expected [H, W, C], got " + shape_to_string(hwc.shape()));
  if (window < 1) throw Error("window_partition: window must be positive");
  const int64_t h = hwc.dim(0), w = hwc.dim(1), c = hwc.dim(2);
  const int64_t nwh = windows_along(h, window), nww = windows_along(w, window);
  expect_shape(out, {nwh * nww, window, window, c}, "window_partition");
  const size_t token_bytes = static_cast<size_t>(c) * sizeof(float);
#pragma omp parallel for collapse(2) schedule(dynamic, 4) if (out.numel() > (1 << 16))
  for (int64_t wy = 0; wy < nwh; ++wy) {
    for (int64_t y = 0; y < window; ++y) {
      const int64_t gy = wy * window + y;
      for (int64_t wx = 0; wx < nww; ++wx) {
        const int64_t x0 = wx * window;
        const int64_t run = gy < h ? std::clamp<int64_t>(w - x0, 0, window) : 0;
        float* dst = out.data() + (((wy * nww + wx) * window + y) * window) * c;
        if (run > 0) std::memcpy(dst, hwc.data() + (gy * w + x0) * c, static_cast<size_t>(run) * token_bytes);
        for (int64_t x = run; x < window; ++x) {
          if (pad_token) {
            std::memcpy(dst + x * c, pad_token, token_bytes);
          } else {
            std::memset(dst + x * c, 0, token_bytes);
          }
        }
      }
    }
  }
}

Tensor window_partition(const Tensor& hwc, int64_t window) {
  if (hwc.rank() != 3) throw Error("window_partition: expected [H, W, C], got " + shape_to_string(hwc.shape()));
  if (window < 1) throw Error("window_partition: window must be positive");
  const int64_t nwh = windows_along(hwc.dim(0), window), nww = windows_along(hwc.dim(1), window);
  Tensor out({nwh * nww, window, window, hwc.dim(2)});
  window_partition_into(hwc, window, nullptr, out);
  return out;
}

void window_unpartition_into(const Tensor& windows, int64_t window, int64_t height, int64_t width, Tensor& out) {
  if (window < 1 || height < 1 || width < 1) throw Error("window_unpartition: sizes must be positive");
  const int64_t nwh = windows_along(height, window), nww = windows_along(width, window);
  const int64_t c = windows.dim(-1);
  if (windows.numel() != nwh * nww * window * window * c) {
    throw Error("window_unpartition: " + shape_to_string(windows.shape()) + " is not " +
                std::to_string(nwh * nww) + " windows of " + std::to_string(window) + "x" +
                std::to_string(window) + " for a " + std::to_string(height) + "x" + std::to_string(width) +
                " grid");
  }
  expect_shape(out, {height, width, c}, "window_unpartition");
#pragma omp parallel for schedule(dynamic, 4) if (out.numel() > (1 << 16))
  for (int64_t gy = 0; gy < height; ++gy) {
    const int64_t wy = gy / window, y = gy % window;
    for (int64_t wx = 0; wx < nww; ++wx) {
      const int64_t x0 = wx * window;
      const int64_t run = std::min(window, width - x0);
      const float* src = windows.data() + (((wy * nww + wx) * window + y) * window) * c;
      std::memcpy(out.data() + (gy * width + x0) * c, src, static_cast<size_t>(run * c) * sizeof(float));
    }
  }
}

Tensor window_unpartition(const Tensor& windows, int64_t window, int64_t height, int64_t width) {
  if (window < 1 || height < 1 || width < 1) throw Error("window_unpartition: sizes must be positive");
  Tensor out({height, width, windows.dim(-1)});
  window_unpartition_into(windows, window, height, width, out);
  return out;
}

void max_pool2x2_into(const Tensor& x, int64_t channel_offset, int64_t channels, Tensor& out) {
  if (x.rank() != 4) throw Error("max_pool2x2: expected [N, H, W, C], got " + shape_to_string(x.shape()));
  const int64_t n = x.dim(0), h = x.dim(1), w = x.dim(2), stride = x.dim(3);
  if (channel_offset < 0 || channels < 1 || channel_offset + channels > stride) {
    throw Error("max_pool2x2: channels out of range for " + shape_to_string(x.shape()));
  }
  const int64_t oh = h / 2, ow = w / 2;
  expect_shape(out, {n, oh, ow, channels}, "max_pool2x2");
#pragma omp parallel for collapse(2) schedule(dynamic, 4) if (out.numel() > (1 << 15))
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t oy = 0; oy < oh; ++oy) {
      for (int64_t ox = 0; ox < ow; ++ox) {
        const float* p00 = x.data() + ((b * h + 2 * oy) * w + 2 * ox) * stride + channel_offset;
        const float* p01 = p00 + stride;
        const float* p10 = p00 + w * stride;
        const float* p11 = p10 + stride;
        float* dst = out.data() + ((b * oh + oy) * ow + ox) * channels;
        for (int64_t i = 0; i < channels; ++i) dst[i] = std::max(std::max(p00[i], p01[i]), std::max(p10[i], p11[i]));
      }
    }
  }
}

Tensor max_pool2x2(const Tensor& x, int64_t channel_offset, int64_t channels) {
  if (x.rank() != 4) throw Error("max_pool2x2: expected [N, H, W, C], got " + shape_to_string(x.shape()));
  Tensor out({x.dim(0), x.dim(1) / 2, x.dim(2) / 2, channels});
  max_pool2x2_into(x, channel_offset, channels, out);
  return out;
}

}  // namespace sam2rt
