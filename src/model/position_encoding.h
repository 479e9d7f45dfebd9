#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace sam2rt {

// PositionEmbeddingSine (sam2/modeling/position_encoding.py) for an H x W map:
// [1, num_pos_feats, H, W], channels [y-part, x-part], each num_pos_feats/2 long
// with sin (even channel) / cos (odd channel) interleaved. With `normalize`,
// positions 1..n are divided by (n + 1e-6) and scaled by 2*pi. Computed in
// float32 like the official code (which forces float32 here).
Tensor sine_position_encoding(int64_t num_pos_feats, int64_t height, int64_t width, double temperature,
                              bool normalize);

}  // namespace sam2rt
