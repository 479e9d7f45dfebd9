#pragma once

#include <cstdint>

namespace sam2rt {

// The mask decoder's last steps for one input row of its second ConvTranspose
// (2x2, stride 2): each pixel of the two output rows the row makes is its tap
// plus bias plus the same pixel of the skip connection (feat_s0), then GELU,
// then its dot with each mask token's hypernetwork vector:
//   out[m * ldo + dy * 2w + 2j + dx] = sum_c hyper[m, c] GELU((taps[t, j] + bias[c]) + skip[t, j]),
//   t = (dy * 2 + dx) * cout + c.
// Taps are planar, [4 * cout, w] (row stride ld_taps: the band's GEMM W^T x^T),
// and so is skip ([4 * cout, w], row stride w: nchw_to_2x2_taps of feat_s0):
// a register holds one channel of 16 pixels, so each mask's sum over the
// channels is a chain of multiply-adds with its weights broadcast, with no
// reduction across lanes.
struct UpscaledMaskProductsArgs {
  const float* taps;
  int64_t ld_taps, w, cout;
  const float* bias;   // [cout]
  const float* skip;
  const float* hyper;  // [masks, cout]
  int64_t masks;
  float* out;
  int64_t ldo;
  float* scratch;      // w floats (the unfused path's)
};
// AVX-512 CPUs run SAM 2.1's shape (32 channels, up to 4 masks, w a multiple
// of 16) fused, a pixel's values in registers from the tap to the products;
// anything else the unfused steps.
void upscaled_mask_products(const UpscaledMaskProductsArgs& args);
// A channel's row of values at a time (gelu_exact_inplace), then its products
// added to out.
void upscaled_mask_products_unfused(const UpscaledMaskProductsArgs& args);
// The plain loops (libm's GELU, double sums) both are tested against.
void upscaled_mask_products_reference(const UpscaledMaskProductsArgs& args);

}  // namespace sam2rt
