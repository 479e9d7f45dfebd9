#pragma once

#include <cstdint>

namespace sam2rt {

// torch.nn.functional.interpolate(x, (dst_h, dst_w), mode="bilinear",
// align_corners=False, antialias=True) on float32 planes, which is what
// torchvision's Resize does to a tensor (the official SAM2ImagePredictor's
// preprocessing). Separable triangle filter whose support grows with the
// downscale factor (1 when upscaling), weights normalised per output pixel,
// float32 arithmetic; the horizontal pass runs first into a float32
// intermediate, and a pass whose size does not change is skipped (it would copy).
// src: `planes` row-major planes of src_h x src_w; dst: planes of dst_h x dst_w,
// not overlapping src.
void resize_bilinear_antialias(const float* src, int64_t planes, int src_w, int src_h, float* dst, int dst_w,
                               int dst_h);

}  // namespace sam2rt
