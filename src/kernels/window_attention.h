#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "kernels/matmul.h"

namespace sam2rt {

// Hiera's windowed attention core (window_partition, optional 2x2 max-pool of q,
// multi-head attention inside each window, window_unpartition) straight from the
// qkv of the token grid, without materialising the partitioned windows: each
// window is gathered into a small per-thread buffer, attended, and its result
// written to its place in the output grid.
//
// qkv [H, W, 3C] holds per token (q | k | v), each `heads` x C/heads. The grid is
// split into w x w windows, padded at the bottom/right with `pad_token` (3C
// values: what a zero token becomes under qkv). With q_pool, q is max-pooled 2x2
// inside each window and out is [H/2, W/2, C]; otherwise out is [H, W, C].
// Padding is cropped from the output.
// bf16_products: as AttentionArgs::bf16_products.
void windowed_attention(const Tensor& qkv, int64_t window, const float* pad_token, int64_t heads, bool q_pool,
                        Tensor& out, bool bf16_products = false);

// Whether window x window windows tile a height x width grid without padding.
bool windows_tile(int64_t height, int64_t width, int64_t window);

// The qkv projection and windowed_attention in one pass over a grid the windows
// tile: each thread projects the tokens of a few windows (`qkv`'s one-thread GEMM)
// and attends them while their qkv is in its cache; the whole qkv grid never
// exists. x holds the H x W tokens' inputs, row-major, float32 or bfloat16 as the
// layer's precision. out as in windowed_attention.
void qkv_windowed_attention_tiled(const PackedLinear& qkv, const void* x, int64_t height, int64_t width,
                                  int64_t window, int64_t heads, bool q_pool, Tensor& out, bool bf16_products);

}  // namespace sam2rt
