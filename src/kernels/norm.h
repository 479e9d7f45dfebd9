#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "kernels/simd_dispatch.h"

namespace sam2rt {

// LayerNorm comes in two forms that round differently: the double-precision one
// (layer_norm, layer_norm_2d: mean and variance accumulated in double), which the
// decoder's token norms and the mask prompt's downscaling use, and the
// single-precision kernel with one entry per SIMD level (layer_norm_rows), which
// the encoder and the decoder's image rows use. norm.cpp says why both stay.

// LayerNorm over the last axis (nn.LayerNorm): (x - mean) / sqrt(var + eps) * w + b,
// biased variance, in double. Hiera uses eps 1e-6, the TwoWayTransformer 1e-5.
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps);

// LayerNorm2d over the channel axis of an NCHW tensor (SAM's LayerNorm2d), eps 1e-6,
// in double.
Tensor layer_norm_2d(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps);

// The fast row-wise LayerNorm: single precision, vectorised, rows split over
// the OpenMP threads. x and y are [rows, channels] with row strides ldx / ldy; y
// may be float or bfloat16 (uint16_t) for a bf16 GEMM.
void layer_norm_rows(const float* x, int64_t ldx, int64_t rows, int64_t channels, const float* weight,
                     const float* bias, float eps, float* y, int64_t ldy, SimdLevel level = best_simd_level());
void layer_norm_rows(const float* x, int64_t ldx, int64_t rows, int64_t channels, const float* weight,
                     const float* bias, float eps, uint16_t* y, int64_t ldy, SimdLevel level = best_simd_level());

}  // namespace sam2rt
