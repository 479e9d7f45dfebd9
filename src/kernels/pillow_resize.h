#pragma once

#include <cstdint>

namespace sam2rt {

// The two Pillow filters the official SAM 2 loaders use: BILINEAR (the image
// predictor's model card path) and BICUBIC (`Image.resize`'s default, which
// the video loader's `_load_img_as_tensor` gets for RGB images).
enum class PillowFilter { bilinear, bicubic };

// Pillow 9.4 `Image.resize((dst_w, dst_h), filter)` (reducing_gap None, no box)
// on interleaved 8-bit pixels with 1 to 4 channels, bit for bit: separable
// filter whose support grows with the downscale factor, 22-bit fixed-point
// weights, horizontal pass first into a uint8 intermediate clipped to 0..255, a
// pass whose size does not change is skipped. dst must hold
// dst_w * dst_h * channels bytes and must not overlap src.
void pillow_resize(const uint8_t* src, int src_w, int src_h, int channels, uint8_t* dst,
                   int dst_w, int dst_h, PillowFilter filter);

}  // namespace sam2rt
