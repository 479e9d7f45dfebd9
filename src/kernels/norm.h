#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "kernels/simd_dispatch.h"

namespace sam2rt {

// LayerNorm over the last axis (nn.LayerNorm): (x - mean) / sqrt(var + eps) * w + b,
// biased variance. Hiera uses eps 1e-6, the TwoWayTransformer 1e-5.
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps);

// LayerNorm2d over the channel axis of an NCHW tensor (SAM's LayerNorm2d), eps 1e-6.
Tensor layer_norm_2d(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps);

// The fast row-wise LayerNorm the encoder uses: single precision, vectorised,
// rows split over the OpenMP threads. x and y are [rows, channels] with row
// strides ldx / ldy; y may be float or bfloat16 (uint16_t) for a bf16 GEMM.
void layer_norm_rows(const float* x, int64_t ldx, int64_t rows, int64_t channels, const float* weight,
                     const float* bias, float eps, float* y, int64_t ldy, SimdLevel level = best_simd_level());
void layer_norm_rows(const float* x, int64_t ldx, int64_t rows, int64_t channels, const float* weight,
                     const float* bias, float eps, uint16_t* y, int64_t ldy, SimdLevel level = best_simd_level());

}  // namespace sam2rt
