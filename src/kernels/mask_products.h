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

// The upscaling's last steps for one input row of its second ConvTranspose
// (2x2, stride 2): each of the two output rows' 2w pixels is its tap (taps
// [w, 4 * cout], conv_transpose_2x2_taps_hwc) plus bias, plus the same pixel of
// skip ([2, 2w, cout]), then GELU, then its mask products (as mask_products,
// out[m * ldo + dy * 2w + x]). The same bits as scatter_2x2_taps,
// gelu_exact_inplace and mask_products in turn, which is what it runs where no
// fused path applies, in scratch (2 * 2w * cout floats); the fused path (AVX-512,
// SAM 2.1's 32 channels and up to 4 masks) keeps each pixel in registers.
struct UpscaledMaskProductsArgs {
  const float* taps;
  int64_t w, cout;
  const float* bias;  // [cout]
  const float* skip;
  const float* hyper;  // [masks, cout]
  int64_t masks;
  float* out;
  int64_t ldo;
  float* scratch;
};
void upscaled_mask_products(const UpscaledMaskProductsArgs& a);
// The unfused steps, whatever the CPU: what the fused path is tested against.
void upscaled_mask_products_unfused(const UpscaledMaskProductsArgs& a);

// The plain loops (double sums) it is tested against.
void mask_products_reference(const float* hyper, int64_t masks, int64_t channels, const float* pixels,
                             int64_t count, float* out, int64_t ldo);

}  // namespace sam2rt
