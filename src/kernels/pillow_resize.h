#pragma once

#include <cstdint>

namespace sam2rt {

// Pillow 9.4 `Image.resize((dst_w, dst_h), Image.BILINEAR)` (reducing_gap None,
// no box) on interleaved 8-bit pixels with 1 to 4 channels, bit for bit:
// separable triangle filter whose support grows with the downscale factor,
// 22-bit fixed-point weights, horizontal pass first into a uint8 intermediate,
// a pass whose size does not change is skipped. dst must hold
// dst_w * dst_h * channels bytes and must not overlap src.
void pillow_bilinear_resize(const uint8_t* src, int src_w, int src_h, int channels, uint8_t* dst,
                            int dst_w, int dst_h);

}  // namespace sam2rt
