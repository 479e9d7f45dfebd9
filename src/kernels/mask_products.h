#pragma once

#include <cstdint>

namespace sam2rt {

// The mask decoder's last step: each mask token's hypernetwork vector dotted with
// every pixel of the upscaled map,
//   out[m * ldo + p] = sum_c hyper[m * channels + c] * pixels[p * channels + c],
// for `masks` vectors over `count` pixels ([count, channels], channels last).
// SAM 2.1's shape (4 masks, 32 channels) goes four pixels at a time with every
// product in registers and one reduction tree for their 16 sums; a GEMM call with
// M = 4 spent more time on its blocking than on the 262,144 products of a band.
void mask_products(const float* hyper, int64_t masks, int64_t channels, const float* pixels, int64_t count,
                   float* out, int64_t ldo);

// The plain loops (double sums) it is tested against.
void mask_products_reference(const float* hyper, int64_t masks, int64_t channels, const float* pixels,
                             int64_t count, float* out, int64_t ldo);

}  // namespace sam2rt
