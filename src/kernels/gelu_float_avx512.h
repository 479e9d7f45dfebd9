#pragma once

#include <immintrin.h>

#include <cmath>

// The AVX-512 level's GELU lanes (kernels/gelu.h), for kernels that apply it to
// values already in registers on their way to other work: the same bits as
// gelu_exact_inplace at that level.

namespace sam2rt::gelu_float_avx512 {

// Phi on [kLow, kHigh] in 32 pieces of width 1/2 and degree 5, the coefficients
// rounded to float, so that each coefficient's 32 values sit in two registers.
// Degree 5 is the lowest whose error stays within the float rounding's: the
// largest |GELU error| / max(1, |x|) over [-9, 9] in steps of 2^-16 is 1.19e-7
// at degree 5, 6 and 7 alike, 4.5e-7 at degree 4. Each degree less is a permute
// and a multiply-add less per 16 values.
constexpr float kLow = -8.0f, kHigh = 8.0f;
constexpr int kPiecesPerUnit = 2;
constexpr int kPieces = static_cast<int>((kHigh - kLow) * kPiecesPerUnit);
constexpr int kDegree = 5;
constexpr int kCoefficients = kDegree + 1;
constexpr int kTableRegisters = 2 * kCoefficients;

// The coefficients, [coefficient][piece]: kTableRegisters * 16 floats.
const float* float_table();

// GCC 12's AVX-512 intrinsics start many results from an "undefined" vector,
// which it then reports as maybe-uninitialized once inlined.
#pragma GCC diagnostic push
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

// float_table() into the kTableRegisters registers gelu_16_floats reads.
__attribute__((target("avx512f"), always_inline)) inline void load_table(__m512* table) {
  const float* coefficients = float_table();
  for (int k = 0; k < kTableRegisters; ++k) table[k] = _mm512_loadu_ps(coefficients + 16 * k);
}

// x * Phi(x) for 16 floats; table as load_table leaves it. Needs AVX512DQ
// (vreduceps) besides AVX512F.
__attribute__((target("avx512f,avx512dq"), always_inline)) inline __m512 gelu_16_floats(const __m512* table,
                                                                                        __m512 v) {
  static_assert(kPiecesPerUnit == 2, "a power of two: u below rounds as (v - kLow) * kPiecesPerUnit");
  // From the float below kHigh on, (v - kLow) * kPiecesPerUnit rounds to the
  // pieces' end: those x take Phi = 1, as x >= kHigh do.
  const __m512 top = _mm512_set1_ps(std::nextafter(kHigh, 0.0f)), low = _mm512_set1_ps(kLow);
  // u's piece floor(u) and its place in it, t = 2 (u - floor(u)) - 1 in [-1, 1),
  // every step exact but t's one rounding. Outside [kLow, top) the piece is any
  // (vpermt2ps reads the index's low bits) and the result is replaced below; NaN
  // stays NaN through t.
  const __m512 u = _mm512_fmadd_ps(v, _mm512_set1_ps(kPiecesPerUnit), _mm512_set1_ps(-kLow * kPiecesPerUnit));
  const __m512i piece = _mm512_cvt_roundps_epi32(u, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  const __m512 in_piece = _mm512_reduce_ps(u, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  const __m512 t = _mm512_fmadd_ps(in_piece, _mm512_set1_ps(2.0f), _mm512_set1_ps(-1.0f));
  __m512 phi = _mm512_permutex2var_ps(table[2 * kDegree], piece, table[2 * kDegree + 1]);
  for (int k = kDegree - 1; k >= 0; --k) {
    phi = _mm512_fmadd_ps(phi, t, _mm512_permutex2var_ps(table[2 * k], piece, table[2 * k + 1]));
  }
  // Phi is 0 at and below kLow (so -inf gives NaN, as the formula does).
  phi = _mm512_mask_mov_ps(phi, _mm512_cmp_ps_mask(v, low, _CMP_LE_OQ), _mm512_setzero_ps());
  return _mm512_mask_mov_ps(_mm512_mul_ps(v, phi), _mm512_cmp_ps_mask(v, top, _CMP_GE_OQ), v);
}

#pragma GCC diagnostic pop

}  // namespace sam2rt::gelu_float_avx512
