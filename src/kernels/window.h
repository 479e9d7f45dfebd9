#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace sam2rt {

// Number of windows of `window` tokens along an axis of `size` tokens, the
// axis zero-padded at the end to a multiple of the window.
int64_t windows_along(int64_t size, int64_t window);

// Hiera's window_partition: token-major [H, W, C] -> [nWh * nWw, w, w, C], the
// grid zero-padded at the bottom/right to multiples of w. Windows are ordered
// row-major over the window grid.
Tensor window_partition(const Tensor& hwc, int64_t window);

// Hiera's window_unpartition: [nWh * nWw, w, w, C] laid out over the grid of
// ceil(H/w) x ceil(W/w) windows -> [H, W, C], the padding cropped away.
Tensor window_unpartition(const Tensor& windows, int64_t window, int64_t height, int64_t width);

// nn.MaxPool2d(2, stride 2, ceil_mode False) on [N, H, W, C] token-major maps,
// reading only channels [channel_offset, channel_offset + channels) of the last
// axis (e.g. the q part of a fused qkv tensor): -> [N, H/2, W/2, channels].
Tensor max_pool2x2(const Tensor& x, int64_t channel_offset, int64_t channels);
inline Tensor max_pool2x2(const Tensor& x) { return max_pool2x2(x, 0, x.dim(-1)); }

// The same three into caller-provided tensors of the result's shape (e.g. from a
// BufferPool, not zeroed). window_partition_into sets every padding token to
// pad_token (C values), or to zeros when pad_token is null.
void window_partition_into(const Tensor& hwc, int64_t window, const float* pad_token, Tensor& out);
void window_unpartition_into(const Tensor& windows, int64_t window, int64_t height, int64_t width, Tensor& out);
void max_pool2x2_into(const Tensor& x, int64_t channel_offset, int64_t channels, Tensor& out);

}  // namespace sam2rt
