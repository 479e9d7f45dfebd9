#pragma once

// Portable SIMD building blocks (GCC/Clang vector extensions). A kernel body is
// written once as an always_inline template over the vector type and
// instantiated inside functions compiled for AVX-512, AVX2 or the baseline ISA;
// simd_dispatch.h picks one at run time, so the binary runs on any x86-64 CPU.
// Arithmetic is plain IEEE single precision (no fast-math), so every path rounds
// the same way per element; only the order of reductions differs, and
// exp_fused, whose AVX2 and AVX-512 paths round once per multiply-add.

#include <bit>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

// The helpers below pass wide vectors by value; they are always inlined into
// functions compiled for the matching ISA, so no call ever crosses that ABI.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

namespace sam2rt {

namespace simd {

template <int Lanes>
struct Types {
  using F [[gnu::vector_size(Lanes * 4)]] = float;
  using I [[gnu::vector_size(Lanes * 4)]] = int32_t;
  static constexpr int lanes = Lanes;
};

template <class V>
[[gnu::always_inline]] inline V load(const float* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <class V>
[[gnu::always_inline]] inline void store(float* p, V v) {
  std::memcpy(p, &v, sizeof v);
}

template <class V>
[[gnu::always_inline]] inline V splat(float x) {
  return V{} + x;
}

template <class V>
[[gnu::always_inline]] inline V max(V a, V b) {
  return a > b ? a : b;
}

template <class V>
[[gnu::always_inline]] inline float reduce_add(V v) {
  float lanes[sizeof(V) / 4];
  std::memcpy(lanes, &v, sizeof v);
  float sum = 0.0f;
  for (float x : lanes) sum += x;
  return sum;
}

template <class V>
[[gnu::always_inline]] inline float reduce_max(V v) {
  float lanes[sizeof(V) / 4];
  std::memcpy(lanes, &v, sizeof v);
  float m = lanes[0];
  for (float x : lanes) m = x > m ? x : m;
  return m;
}

// e^x in single precision, relative error below 2 ulp for x in [-87.3, 88.3];
// smaller x gives ~1e-38 instead of 0 (harmless where it is used: softmax
// weights). Cody-Waite reduction x = n ln2 + r, |r| <= ln2/2, and the Taylor
// polynomial of e^r of degree Degree (7: truncation < 6e-9 relative; 5: < 3e-6,
// enough for results rounded to bfloat16), then 2^n in the exponent.
namespace exp_constants {
inline constexpr float kLow = -87.3f, kHigh = 88.3f;
inline constexpr float kShifter = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
inline constexpr float kLog2e = 1.44269504088896341f;
inline constexpr float kLn2High = 0.693145751953125f, kLn2Low = 1.42860682030941723212e-6f;
inline constexpr float kInverseFactorials[] = {1.0f,         1.0f,          1.0f / 2.0f,   1.0f / 6.0f,
                                               1.0f / 24.0f, 1.0f / 120.0f, 1.0f / 720.0f, 1.0f / 5040.0f};
}  // namespace exp_constants

template <class V, class VI, int Degree = 7>
[[gnu::always_inline]] inline V exp(V x) {
  using namespace exp_constants;
  static_assert(Degree >= 1 && Degree <= 7);
  x = x < kLow ? splat<V>(kLow) : x;
  x = x > kHigh ? splat<V>(kHigh) : x;
  const V shifter = splat<V>(kShifter);
  const V shifted = x * kLog2e + shifter;
  const V n = shifted - shifter;
  const V r = (x - n * kLn2High) - n * kLn2Low;
  V p = splat<V>(kInverseFactorials[Degree]);
  for (int k = Degree - 1; k >= 0; --k) p = p * r + kInverseFactorials[k];
  const VI exponent = (std::bit_cast<VI>(shifted) - 0x4B400000) << 23;
  return std::bit_cast<V>(std::bit_cast<VI>(p) + exponent);
}

// exp (degree 7) with its reduction and polynomial as fused multiply-adds on
// the AVX-512 (16 lanes) and AVX2 (8 lanes) paths: a third fewer operations
// than exp's separate products and sums, and at least as accurate; both widths
// round alike, the baseline (4 lanes) is exp. Not always_inline: the generic
// kernel templates that call it are compiled for no particular ISA; their
// ISA-specific entry points inline it (gnu::flatten).
#if defined(__x86_64__)
// GCC 12's AVX-512 intrinsics start some results from an "undefined" vector,
// which it then reports as maybe-uninitialized once inlined.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
[[gnu::target("avx512f")]] inline Types<16>::F exp_fused(Types<16>::F in) {
  using namespace exp_constants;
  __m512 x = (__m512)in;  // vector casts, not std::bit_cast: no call even unoptimised
  // The clamps as max / min with the bound first: a NaN x stays NaN, as in the
  // compare-and-blend of the other widths.
  x = _mm512_max_ps(_mm512_set1_ps(kLow), x);
  x = _mm512_min_ps(_mm512_set1_ps(kHigh), x);
  const __m512 shifter = _mm512_set1_ps(kShifter);
  const __m512 shifted = _mm512_fmadd_ps(x, _mm512_set1_ps(kLog2e), shifter);
  const __m512 n = _mm512_sub_ps(shifted, shifter);
  const __m512 r_high = _mm512_fmadd_ps(n, _mm512_set1_ps(-kLn2High), x);
  const __m512 r = _mm512_fmadd_ps(n, _mm512_set1_ps(-kLn2Low), r_high);
  __m512 p = _mm512_set1_ps(kInverseFactorials[7]);
  for (int k = 6; k >= 0; --k) p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kInverseFactorials[k]));
  // p 2^n in one instruction; exact, as adding n to p's exponent field is,
  // wherever the result is a normal float.
  return (Types<16>::F)_mm512_scalef_ps(p, n);
}
#pragma GCC diagnostic pop

[[gnu::target("avx2,fma")]] inline Types<8>::F exp_fused(Types<8>::F in) {
  using namespace exp_constants;
  __m256 x = (__m256)in;
  x = _mm256_blendv_ps(x, _mm256_set1_ps(kLow), _mm256_cmp_ps(x, _mm256_set1_ps(kLow), _CMP_LT_OQ));
  x = _mm256_blendv_ps(x, _mm256_set1_ps(kHigh), _mm256_cmp_ps(x, _mm256_set1_ps(kHigh), _CMP_GT_OQ));
  const __m256 shifter = _mm256_set1_ps(kShifter);
  const __m256 shifted = _mm256_fmadd_ps(x, _mm256_set1_ps(kLog2e), shifter);
  const __m256 n = _mm256_sub_ps(shifted, shifter);
  const __m256 r_high = _mm256_fmadd_ps(n, _mm256_set1_ps(-kLn2High), x);
  const __m256 r = _mm256_fmadd_ps(n, _mm256_set1_ps(-kLn2Low), r_high);
  __m256 p = _mm256_set1_ps(kInverseFactorials[7]);
  for (int k = 6; k >= 0; --k) p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kInverseFactorials[k]));
  const __m256i biased = _mm256_sub_epi32(_mm256_castps_si256(shifted), _mm256_set1_epi32(0x4B400000));
  const __m256i exponent = _mm256_slli_epi32(biased, 23);
  return (Types<8>::F)_mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(p), exponent));
}
#endif

template <class V>
[[gnu::always_inline]] inline V exp_fused(V x) {
  return exp<V, typename Types<sizeof(V) / 4>::I>(x);
}

// float -> bfloat16 with round-to-nearest-even (NaN kept quiet), as oneDNN and
// PyTorch convert.
inline uint16_t to_bf16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

inline float from_bf16(uint16_t x) {
  const uint32_t bits = static_cast<uint32_t>(x) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

}  // namespace simd
}  // namespace sam2rt

#pragma GCC diagnostic pop
