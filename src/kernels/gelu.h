#pragma once

#include <cstdint>

#include "kernels/simd_dispatch.h"

namespace sam2rt {

// Exact (erf) GELU, x * Phi(x), in place: torch's nn.GELU() default, one kernel
// per SIMD level. Phi comes from tables of piecewise polynomials (built once from
// std::erf) instead of a libm call per element, which made GELU the largest cost
// of the mask decoder's upscaling.
//  - baseline: double evaluation from 256 degree-6 pieces looked up per element:
//    float(0.5 * x * (1 + erf(x / sqrt(2)))) within one ulp.
//  - avx2: single precision, 8 lanes, from 8 degree-7 pieces of Phi's tail (Phi(x)
//    for x < 0, 1 - Phi(-x) otherwise), one register per coefficient.
//  - avx512: single precision, 16 lanes, from 32 degree-5 pieces of Phi, two
//    registers per coefficient (gelu_float_avx512.h, which kernels that apply
//    GELU to values already in registers share).
// The single-precision levels are within an absolute 2.5e-7 * max(1, |x|) of the
// formula (up to ~10 ulp relative, more where Phi is tiny).
void gelu_exact_inplace(float* x, int64_t count);
// The kernel of `level` (capped by the CPU's), for tests and benchmarks.
void gelu_exact_inplace(float* x, int64_t count, SimdLevel level);

// float(0.5 * x * (1 + erf(x / sqrt(2)))) with libm's double erf, the reference.
float gelu_exact_reference(float x);

}  // namespace sam2rt
