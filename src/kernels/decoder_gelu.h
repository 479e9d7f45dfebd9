#pragma once

#include <cstdint>

namespace sam2rt {

// Exact (erf) GELU, x * Phi(x), in place: the value of
// float(0.5 * x * (1 + erf(x / sqrt(2)))) evaluated in double, up to the last bit
// in rare double-rounding cases. Phi comes from a table of piecewise polynomials
// (built once from std::erf) instead of a libm call per element, which made GELU
// the largest cost of the mask decoder's upscaling.
// Uses AVX2 where the CPU has it; gelu_exact_inplace_portable is the plain loop,
// bit-identical, which the vector path is tested against.
void gelu_exact_inplace(float* x, int64_t count);
void gelu_exact_inplace_portable(float* x, int64_t count);

// float(0.5 * x * (1 + erf(x / sqrt(2)))) with libm's double erf, the reference.
float gelu_exact_reference(float x);

}  // namespace sam2rt
