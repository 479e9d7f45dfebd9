#pragma once

#include <cstdint>

namespace sam2rt {

// Exact (erf) GELU, x * Phi(x), in place: the value of
// float(0.5 * x * (1 + erf(x / sqrt(2)))) within an absolute 2.5e-7 * max(1, |x|)
// (the double paths: within one ulp). Phi comes from
// tables of piecewise polynomials (built once from std::erf) instead of a libm
// call per element, which made GELU the largest cost of the mask decoder's
// upscaling. Uses the fastest path the CPU has.
void gelu_exact_inplace(float* x, int64_t count);

// The implementations, for tests and benchmarks. kPortable and kAvx2 evaluate in
// double from 256 degree-6 pieces looked up per element and give identical bits;
// kAvx512 holds 16 degree-13 pieces in registers (no gathers) and may differ from
// them in the last bit; all three are within one ulp. kAvx512Float evaluates 32
// degree-5 pieces in single precision, 16 lanes at a time: absolute error within
// 2.5e-7 * max(1, |x|) (up to ~10 ulp relative, more where Phi is tiny).
// kAvx2Float evaluates in single precision 8 lanes at a time, from 8 degree-7
// pieces of Phi's tail (Phi(x) for x < 0, 1 - Phi(-x) otherwise), within the same
// absolute error; it is what AVX2 CPUs run, several times faster than kAvx2's
// gathers.
enum class GeluPath { kPortable, kAvx2, kAvx512, kAvx512Float, kAvx2Float };
bool gelu_path_supported(GeluPath path);
// path must be supported.
void gelu_exact_inplace_with(GeluPath path, float* x, int64_t count);

// float(0.5 * x * (1 + erf(x / sqrt(2)))) with libm's double erf, the reference.
float gelu_exact_reference(float x);

}  // namespace sam2rt
