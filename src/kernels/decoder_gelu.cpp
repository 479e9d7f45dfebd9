#include "kernels/decoder_gelu.h"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>
#include <vector>

#include "kernels/gelu_float_avx512.h"
#include "kernels/simd.h"

namespace sam2rt {

namespace {

// Phi(x) = 0.5 (1 + erf(x / sqrt 2)) on [-8, 8] in pieces of width 1/pieces_per_unit,
// each a polynomial in t in [-1, 1] (Chebyshev interpolation of Phi). Outside,
// Phi rounds to 0 or 1 in the float result.
constexpr double kLow = -8.0, kHigh = 8.0, kHighClamp = kHigh - 1e-9;

long double normal_cdf(long double x) { return 0.5L * (1.0L + std::erf(x / std::numbers::sqrt2_v<long double>)); }

// Chebyshev interpolation of f on [low, high] in pieces of width
// 1/pieces_per_unit: monomial coefficients in t, piece after piece: [pieces][degree + 1].
template <class F>
std::vector<double> chebyshev_pieces(F f, double low, double high, int pieces_per_unit, int degree) {
  const int coefficients = degree + 1, pieces = static_cast<int>((high - low) * pieces_per_unit);
  // Chebyshev polynomials T_k as monomials in t, chebyshev[k][i] = coefficient of t^i.
  std::vector<std::vector<long double>> chebyshev(coefficients, std::vector<long double>(coefficients, 0.0L));
  chebyshev[0][0] = 1.0L;
  if (coefficients > 1) chebyshev[1][1] = 1.0L;
  for (int k = 2; k < coefficients; ++k)
    for (int i = 0; i < coefficients; ++i)
      chebyshev[k][i] = (i > 0 ? 2.0L * chebyshev[k - 1][i - 1] : 0.0L) - chebyshev[k - 2][i];

  std::vector<double> monomial(static_cast<size_t>(pieces * coefficients));
  for (int piece = 0; piece < pieces; ++piece) {
    const long double a = low + static_cast<long double>(piece) / pieces_per_unit;
    const long double half_width = 0.5L / pieces_per_unit;
    std::vector<long double> series(coefficients, 0.0L);
    for (int j = 0; j < coefficients; ++j) {
      for (int node = 0; node < coefficients; ++node) {
        const long double theta = std::numbers::pi_v<long double> * (node + 0.5L) / coefficients;
        series[j] += f(a + half_width * (1.0L + std::cos(theta))) * std::cos(j * theta);
      }
      series[j] *= 2.0L / coefficients;
    }
    series[0] *= 0.5L;
    for (int i = 0; i < coefficients; ++i) {
      long double sum = 0.0L;
      for (int k = 0; k < coefficients; ++k) sum += series[k] * chebyshev[k][i];
      monomial[static_cast<size_t>(piece * coefficients + i)] = static_cast<double>(sum);
    }
  }
  return monomial;
}

std::vector<double> phi_pieces(int pieces_per_unit, int degree) {
  return chebyshev_pieces(normal_cdf, kLow, kHigh, pieces_per_unit, degree);
}

// [pieces][coefficients] -> [coefficients][pieces] as T: a coefficient's values
// for every piece side by side, as the register lookups read them.
template <class T>
std::vector<T> by_coefficient(const std::vector<double>& by_piece, int pieces, int coefficients) {
  std::vector<T> out(by_piece.size());
  for (int p = 0; p < pieces; ++p)
    for (int k = 0; k < coefficients; ++k)
      out[static_cast<size_t>(k * pieces + p)] = static_cast<T>(by_piece[static_cast<size_t>(p * coefficients + k)]);
  return out;
}

// The portable and AVX2 paths: 256 pieces of degree 6 (about 2e-12 absolute
// error), looked up per element.
constexpr int kPiecesPerUnit = 16;
constexpr int kDegree = 6;
constexpr int kCoefficients = kDegree + 1;

const double* phi_table() {
  static const std::vector<double> table = phi_pieces(kPiecesPerUnit, kDegree);
  return table.data();
}

// The AVX-512 path: 16 pieces of width 1 and degree 13, few enough that each
// coefficient's 16 values sit in two registers and a two-source permute looks
// them up (gathers are slow on some CPUs, e.g. AMD Zen 4/5). Stored coefficient
// after coefficient: [coefficient][piece].
constexpr int kWidePieces = 16;
constexpr int kWideDegree = 13;
constexpr int kWideCoefficients = kWideDegree + 1;

const double* wide_phi_table() {
  static const std::vector<double> table =
      by_coefficient<double>(phi_pieces(1, kWideDegree), kWidePieces, kWideCoefficients);
  return table.data();
}

// One element; the AVX2 path below performs the same operations lane by lane, so
// both give identical bits.
inline float gelu_from_table(const double* table, float x) {
  const double v = x;
  // The clamp (NaN goes to kLow) keeps the piece index in range; the selects fix the tails.
  const double clamped = v > kLow ? (v < kHigh ? v : kHighClamp) : kLow;
  const double u = (clamped - kLow) * kPiecesPerUnit;
  const int piece = static_cast<int>(u);
  const double t = 2.0 * (u - piece) - 1.0;
  const double* c = table + piece * kCoefficients;
  double phi = c[kDegree];
  for (int k = kDegree - 1; k >= 0; --k) phi = phi * t + c[k];
  phi = v >= kHigh ? 1.0 : phi;
  phi = v <= kLow ? 0.0 : phi;
  return static_cast<float>(v * phi);
}

// _mm256_i32gather_pd starts from an undefined vector, which GCC 12 reports as
// maybe-uninitialized; the masked form with every lane enabled is the same load.
__attribute__((target("avx2"))) inline __m256d gather(const double* base, __m128i index) {
  const __m256d all_lanes = _mm256_castsi256_pd(_mm256_set1_epi64x(-1));
  return _mm256_mask_i32gather_pd(_mm256_setzero_pd(), base, index, all_lanes, 8);
}

__attribute__((target("avx2"))) void gelu_avx2(const double* table, float* x, int64_t count) {
  const __m256d low = _mm256_set1_pd(kLow), high = _mm256_set1_pd(kHigh), high_clamp = _mm256_set1_pd(kHighClamp);
  const __m256d per_unit = _mm256_set1_pd(kPiecesPerUnit), two = _mm256_set1_pd(2.0), one = _mm256_set1_pd(1.0);
  const __m256d zero = _mm256_setzero_pd();
  const __m128i stride = _mm_set1_epi32(kCoefficients);
  int64_t i = 0;
  for (; i + 4 <= count; i += 4) {
    const __m256d v = _mm256_cvtps_pd(_mm_loadu_ps(x + i));
    const __m256d above_low = _mm256_cmp_pd(v, low, _CMP_GT_OQ), below_high = _mm256_cmp_pd(v, high, _CMP_LT_OQ);
    const __m256d clamped = _mm256_blendv_pd(low, _mm256_blendv_pd(high_clamp, v, below_high), above_low);
    const __m256d u = _mm256_mul_pd(_mm256_sub_pd(clamped, low), per_unit);
    const __m128i piece = _mm256_cvttpd_epi32(u);
    const __m256d t = _mm256_sub_pd(_mm256_mul_pd(two, _mm256_sub_pd(u, _mm256_cvtepi32_pd(piece))), one);
    const __m128i base = _mm_mullo_epi32(piece, stride);
    __m256d phi = gather(table + kDegree, base);
    for (int k = kDegree - 1; k >= 0; --k) {
      phi = _mm256_add_pd(_mm256_mul_pd(phi, t), gather(table + k, base));
    }
    phi = _mm256_blendv_pd(phi, one, _mm256_cmp_pd(v, high, _CMP_GE_OQ));
    phi = _mm256_blendv_pd(phi, zero, _mm256_cmp_pd(v, low, _CMP_LE_OQ));
    _mm_storeu_ps(x + i, _mm256_cvtpd_ps(_mm256_mul_pd(v, phi)));
  }
  for (; i < count; ++i) x[i] = gelu_from_table(table, x[i]);
}

// GCC 12's AVX-512 intrinsics start many results from an "undefined" vector,
// which it then reports as maybe-uninitialized once inlined.
#pragma GCC diagnostic push
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
// Eight lanes of x * Phi(x) in double from the wide table (FMA Horner steps).
__attribute__((target("avx512f,avx512dq"))) inline __m512d gelu_wide_lanes(const __m512d (&table)[2 * kWideCoefficients],
                                                                            __m512d v) {
  const __m512d low = _mm512_set1_pd(kLow), high_clamp = _mm512_set1_pd(kHighClamp);
  // max/min return their second operand for NaN, so NaN lands on the low piece.
  const __m512d clamped = _mm512_min_pd(_mm512_max_pd(v, low), high_clamp);
  const __m512d u = _mm512_sub_pd(clamped, low);
  const __m512d floor_u = _mm512_roundscale_pd(u, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  const __m512i piece = _mm512_cvttpd_epi64(floor_u);
  const __m512d t = _mm512_sub_pd(_mm512_mul_pd(_mm512_set1_pd(2.0), _mm512_sub_pd(u, floor_u)), _mm512_set1_pd(1.0));
  __m512d phi = _mm512_permutex2var_pd(table[2 * kWideDegree], piece, table[2 * kWideDegree + 1]);
  for (int k = kWideDegree - 1; k >= 0; --k) {
    phi = _mm512_fmadd_pd(phi, t, _mm512_permutex2var_pd(table[2 * k], piece, table[2 * k + 1]));
  }
  phi = _mm512_mask_blend_pd(_mm512_cmp_pd_mask(v, _mm512_set1_pd(kHigh), _CMP_GE_OQ), phi, _mm512_set1_pd(1.0));
  phi = _mm512_mask_blend_pd(_mm512_cmp_pd_mask(v, low, _CMP_LE_OQ), phi, _mm512_setzero_pd());
  return _mm512_mul_pd(v, phi);
}

__attribute__((target("avx512f,avx512dq"))) inline __m256 gelu_wide_lanes_to_float(
    const __m512d (&table)[2 * kWideCoefficients], __m256 x) {
  return _mm512_cvtpd_ps(gelu_wide_lanes(table, _mm512_cvtps_pd(x)));
}

__attribute__((target("avx512f,avx512dq"))) void gelu_avx512(float* x, int64_t count) {
  const double* wide = wide_phi_table();
  __m512d table[2 * kWideCoefficients];
  for (int k = 0; k < 2 * kWideCoefficients; ++k) table[k] = _mm512_loadu_pd(wide + 8 * k);
  for (int64_t i = 0; i < count; i += 16) {
    const int64_t left = count - i;
    const __mmask16 lanes = left >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << left) - 1u);
    const __m512 in = _mm512_maskz_loadu_ps(lanes, x + i);
    const __m256 lo = gelu_wide_lanes_to_float(table, _mm512_castps512_ps256(in));
    const __m256 hi = gelu_wide_lanes_to_float(table, _mm512_extractf32x8_ps(in, 1));
    _mm512_mask_storeu_ps(x + i, lanes, _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1));
  }
}

__attribute__((target("avx512f,avx512dq"))) void gelu_avx512_float(float* x, int64_t count) {
  using gelu_float_avx512::gelu_16_floats;
  __m512 table[gelu_float_avx512::kTableRegisters];
  gelu_float_avx512::load_table(table);
  // Whole registers with plain loads and stores (masked stores are slow on these
  // cores), two at a time for two independent chains; the tail masked.
  int64_t i = 0;
  for (; i + 32 <= count; i += 32) {
    const __m512 a = gelu_16_floats(table, _mm512_loadu_ps(x + i));
    const __m512 b = gelu_16_floats(table, _mm512_loadu_ps(x + i + 16));
    _mm512_storeu_ps(x + i, a);
    _mm512_storeu_ps(x + i + 16, b);
  }
  for (; i < count; i += 16) {
    const int64_t left = count - i;
    const __mmask16 lanes = left >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << left) - 1u);
    _mm512_mask_storeu_ps(x + i, lanes, gelu_16_floats(table, _mm512_maskz_loadu_ps(lanes, x + i)));
  }
}

#pragma GCC diagnostic pop

// The single-precision AVX2 path. AVX2's one-source permute looks up among 8
// lanes, so the table covers half the line: Q(y) = Phi(-y) on [0, 8] in 8 pieces
// of width 1 and degree 7, one register per coefficient, and Phi(x) = Q(|x|) for
// x < 0, 1 - Q(|x|) otherwise (the tail Q keeps its own relative accuracy where
// Phi is tiny; 1 - Q rounds where it is near 1). Within the same absolute 2.5e-7 *
// max(1, |x|) as the AVX-512 float path (a third of it, measured when the table
// was chosen). Stored [coefficient][piece].
constexpr int kHalfPieces = 8;
constexpr int kHalfDegree = 7;
constexpr int kHalfCoefficients = kHalfDegree + 1;

const float* tail_table() {
  static const std::vector<float> table = by_coefficient<float>(
      chebyshev_pieces([](long double y) { return normal_cdf(-y); }, 0.0, kHigh, 1, kHalfDegree), kHalfPieces,
      kHalfCoefficients);
  return table.data();
}

// x * Phi(x) for 8 floats.
__attribute__((target("avx2,fma"), always_inline)) inline __m256 gelu_8_floats(const __m256* table, __m256 v) {
  const __m256 high = _mm256_set1_ps(static_cast<float>(kHigh));
  const __m256 high_clamp = _mm256_set1_ps(std::nextafter(static_cast<float>(kHigh), 0.0f));
  const __m256 one = _mm256_set1_ps(1.0f), zero = _mm256_setzero_ps();
  const __m256 y = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v);
  // min returns its second operand for NaN, so NaN lands on the last piece.
  const __m256 u = _mm256_min_ps(y, high_clamp);
  const __m256 floor_u = _mm256_round_ps(u, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  const __m256i piece = _mm256_cvttps_epi32(floor_u);
  const __m256 t = _mm256_sub_ps(_mm256_mul_ps(_mm256_set1_ps(2.0f), _mm256_sub_ps(u, floor_u)), one);
  __m256 q = _mm256_permutevar8x32_ps(table[kHalfDegree], piece);
  for (int k = kHalfDegree - 1; k >= 0; --k) q = _mm256_fmadd_ps(q, t, _mm256_permutevar8x32_ps(table[k], piece));
  q = _mm256_blendv_ps(q, zero, _mm256_cmp_ps(y, high, _CMP_GE_OQ));
  const __m256 phi = _mm256_blendv_ps(_mm256_sub_ps(one, q), q, _mm256_cmp_ps(v, zero, _CMP_LT_OQ));
  return _mm256_mul_ps(v, phi);
}

__attribute__((target("avx2,fma"))) void gelu_avx2_float(float* x, int64_t count) {
  static_assert(kHalfPieces == 8, "one register of 8 floats per coefficient");
  const float* coefficients = tail_table();
  __m256 table[kHalfCoefficients];
  for (int k = 0; k < kHalfCoefficients; ++k) table[k] = _mm256_loadu_ps(coefficients + 8 * k);
  int64_t i = 0;
  for (; i + 16 <= count; i += 16) {
    const __m256 a = gelu_8_floats(table, _mm256_loadu_ps(x + i));
    const __m256 b = gelu_8_floats(table, _mm256_loadu_ps(x + i + 8));
    _mm256_storeu_ps(x + i, a);
    _mm256_storeu_ps(x + i + 8, b);
  }
  for (; i + 8 <= count; i += 8) _mm256_storeu_ps(x + i, gelu_8_floats(table, _mm256_loadu_ps(x + i)));
  if (i < count) {
    alignas(32) float tail[8] = {};
    std::copy(x + i, x + count, tail);
    _mm256_store_ps(tail, gelu_8_floats(table, _mm256_load_ps(tail)));
    std::copy(tail, tail + (count - i), x + i);
  }
}

}  // namespace

// The single-precision AVX-512 path: faster than the double path for an absolute
// error of ~2e-7 * max(1, |x|); the decoder's tolerance is an absolute 1e-4 on the
// logits, far above it.
const float* gelu_float_avx512::float_table() {
  static_assert(kPieces == 32, "two registers of 16 floats per coefficient");
  static_assert(kLow == static_cast<float>(sam2rt::kLow) && kHigh == static_cast<float>(sam2rt::kHigh));
  // kPiecesPerUnit and kDegree are this path's (gelu_float_avx512's), not the double paths'.
  static const std::vector<float> table = by_coefficient<float>(
      phi_pieces(gelu_float_avx512::kPiecesPerUnit, gelu_float_avx512::kDegree), kPieces, kCoefficients);
  return table.data();
}

bool gelu_path_supported(GeluPath path) {
  switch (path) {
    case GeluPath::kPortable:
      return true;
    case GeluPath::kAvx2:
    case GeluPath::kAvx2Float:
      return best_simd_level() >= SimdLevel::avx2;
    case GeluPath::kAvx512:
      return best_simd_level() >= SimdLevel::avx512 && __builtin_cpu_supports("avx512dq");
    case GeluPath::kAvx512Float:
      return best_simd_level() >= SimdLevel::avx512;
  }
  return false;
}

void gelu_exact_inplace_with(GeluPath path, float* x, int64_t count) {
  switch (path) {
    case GeluPath::kAvx512:
      gelu_avx512(x, count);
      return;
    case GeluPath::kAvx512Float:
      gelu_avx512_float(x, count);
      return;
    case GeluPath::kAvx2:
      gelu_avx2(phi_table(), x, count);
      return;
    case GeluPath::kAvx2Float:
      gelu_avx2_float(x, count);
      return;
    case GeluPath::kPortable:
      break;
  }
  const double* table = phi_table();
  for (int64_t i = 0; i < count; ++i) x[i] = gelu_from_table(table, x[i]);
}

void gelu_exact_inplace(float* x, int64_t count) {
  static const GeluPath best = gelu_path_supported(GeluPath::kAvx512Float) ? GeluPath::kAvx512Float
                               : gelu_path_supported(GeluPath::kAvx2Float)  ? GeluPath::kAvx2Float
                                                                             : GeluPath::kPortable;
  gelu_exact_inplace_with(best, x, count);
}

float gelu_exact_reference(float x) {
  const double v = x;
  return static_cast<float>(0.5 * v * (1.0 + std::erf(v * M_SQRT1_2)));
}

}  // namespace sam2rt
