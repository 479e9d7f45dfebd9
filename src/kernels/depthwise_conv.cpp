#include "kernels/depthwise_conv.h"

#include <algorithm>
#include <vector>

namespace sam2rt {

void depthwise_conv2d_hwc(const float* x, int64_t height, int64_t width, int64_t channels, const float* weight,
                          int64_t kernel, const float* bias, int64_t padding, float* y) {
  const int64_t out_height = height + 2 * padding - kernel + 1, out_width = width + 2 * padding - kernel + 1;
  // Taps made channel-minor ([k*k, C]) so that the innermost loop runs along
  // the channels of one pixel, contiguous in x, y and the taps alike.
  std::vector<float> taps(static_cast<size_t>(kernel * kernel * channels));
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t t = 0; t < kernel * kernel; ++t)
      taps[static_cast<size_t>(t * channels + c)] = weight[c * kernel * kernel + t];
  }
#pragma omp parallel for schedule(static)
  for (int64_t oy = 0; oy < out_height; ++oy) {
    for (int64_t ox = 0; ox < out_width; ++ox) {
      float* out = y + (oy * out_width + ox) * channels;
      std::copy_n(bias, channels, out);
      for (int64_t ky = 0; ky < kernel; ++ky) {
        const int64_t iy = oy - padding + ky;
        if (iy < 0 || iy >= height) continue;
        for (int64_t kx = 0; kx < kernel; ++kx) {
          const int64_t ix = ox - padding + kx;
          if (ix < 0 || ix >= width) continue;
          const float* in = x + (iy * width + ix) * channels;
          const float* tap = taps.data() + (ky * kernel + kx) * channels;
          for (int64_t c = 0; c < channels; ++c) out[c] += in[c] * tap[c];
        }
      }
    }
  }
}

}  // namespace sam2rt
