#pragma once

#include <cstdint>

namespace sam2rt {

// Depthwise nn.Conv2d (groups = channels), stride 1, zero padding on all
// sides, on a channels-last map: x [H, W, C], weight [C, 1, k, k] (PyTorch's
// layout), bias [C] -> y [H + 2p - k + 1, W + 2p - k + 1, C] (y is not x).
void depthwise_conv2d_hwc(const float* x, int64_t height, int64_t width, int64_t channels, const float* weight,
                          int64_t kernel, const float* bias, int64_t padding, float* y);

}  // namespace sam2rt
