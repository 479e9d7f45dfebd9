#pragma once

#include <cstdint>

#include "core/tensor.h"

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

}  // namespace sam2rt
