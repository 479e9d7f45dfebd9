#include "kernels/gelu.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

#include "kernels/gelu_float_avx512.h"

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

// The baseline kernel: 256 pieces of degree 6 (about 2e-12 absolute error),
// looked up per element.
constexpr int kPiecesPerUnit = 16;
constexpr int kDegree = 6;
constexpr int kCoefficients = kDegree + 1;

const double* phi_table() {
  static const std::vector<double> table = phi_pieces(kPiecesPerUnit, kDegree);
  return table.data();
}

// One element.
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

// GCC 12's AVX-512 intrinsics start many results from an "undefined" vector,
// which it then reports as maybe-uninitialized once inlined.
#pragma GCC diagnostic push
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
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

// The AVX2 kernel. AVX2's one-source permute looks up among 8
// lanes, so the table covers half the line: Q(y) = Phi(-y) on [0, 8] in 8 pieces
// of width 1 and degree 7, one register per coefficient, and Phi(x) = Q(|x|) for
// x < 0, 1 - Q(|x|) otherwise (the tail Q keeps its own relative accuracy where
// Phi is tiny; 1 - Q rounds where it is near 1). Within the same absolute 2.5e-7 *
// max(1, |x|) as the AVX-512 kernel (a third of it, measured when the table was
// chosen). Stored [coefficient][piece].
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

void gelu_baseline(float* x, int64_t count) {
  const double* table = phi_table();
  for (int64_t i = 0; i < count; ++i) x[i] = gelu_from_table(table, x[i]);
}

using Gelu = void (*)(float*, int64_t);
const KernelTable<Gelu> kGelu{.baseline = gelu_baseline, .avx2 = gelu_avx2_float, .avx512 = gelu_avx512_float};

}  // namespace

// The AVX-512 kernel's table: single precision is faster than a double
// evaluation, for an absolute error of ~2e-7 * max(1, |x|); the decoder's
// tolerance is an absolute 1e-4 on the logits, far above it.
const float* gelu_float_avx512::float_table() {
  static_assert(kPieces == 32, "two registers of 16 floats per coefficient");
  static_assert(kLow == static_cast<float>(sam2rt::kLow) && kHigh == static_cast<float>(sam2rt::kHigh));
  // kPiecesPerUnit and kDegree are this kernel's (gelu_float_avx512's), not the baseline's.
  static const std::vector<float> table = by_coefficient<float>(
      phi_pieces(gelu_float_avx512::kPiecesPerUnit, gelu_float_avx512::kDegree), kPieces, kCoefficients);
  return table.data();
}

void gelu_exact_inplace(float* x, int64_t count) { kGelu.best()(x, count); }

void gelu_exact_inplace(float* x, int64_t count, SimdLevel level) { kGelu.at(level)(x, count); }

float gelu_exact_reference(float x) {
  const double v = x;
  return static_cast<float>(0.5 * v * (1.0 + std::erf(v * M_SQRT1_2)));
}

}  // namespace sam2rt
