#include "kernels/decoder_gelu.h"

#include <immintrin.h>

#include <array>
#include <cmath>
#include <numbers>

namespace sam2rt {

namespace {

// Phi(x) = 0.5 (1 + erf(x / sqrt 2)) on [-8, 8] in pieces of width 1/16, each a
// degree-6 polynomial in t in [-1, 1] (Chebyshev interpolation, so the error is
// about 2e-12 absolute). Outside, Phi rounds to 0 or 1 in the float result.
constexpr double kLow = -8.0, kHigh = 8.0, kHighClamp = kHigh - 1e-9;
constexpr int kPiecesPerUnit = 16;
constexpr int kPieces = static_cast<int>((kHigh - kLow) * kPiecesPerUnit);
constexpr int kDegree = 6;
constexpr int kCoefficients = kDegree + 1;

long double normal_cdf(long double x) { return 0.5L * (1.0L + std::erf(x / std::numbers::sqrt2_v<long double>)); }

struct PhiTable {
  std::array<double, kPieces * kCoefficients> monomial{};

  PhiTable() {
    // Chebyshev polynomials T_k as monomials in t, T[k][i] = coefficient of t^i.
    long double chebyshev[kCoefficients][kCoefficients] = {};
    chebyshev[0][0] = 1.0L;
    chebyshev[1][1] = 1.0L;
    for (int k = 2; k < kCoefficients; ++k)
      for (int i = 0; i < kCoefficients; ++i)
        chebyshev[k][i] = (i > 0 ? 2.0L * chebyshev[k - 1][i - 1] : 0.0L) - chebyshev[k - 2][i];

    for (int piece = 0; piece < kPieces; ++piece) {
      const long double a = kLow + static_cast<long double>(piece) / kPiecesPerUnit;
      const long double half_width = 0.5L / kPiecesPerUnit;
      long double series[kCoefficients] = {};
      for (int j = 0; j < kCoefficients; ++j) {
        for (int node = 0; node < kCoefficients; ++node) {
          const long double theta = std::numbers::pi_v<long double> * (node + 0.5L) / kCoefficients;
          series[j] += normal_cdf(a + half_width * (1.0L + std::cos(theta))) * std::cos(j * theta);
        }
        series[j] *= 2.0L / kCoefficients;
      }
      series[0] *= 0.5L;
      for (int i = 0; i < kCoefficients; ++i) {
        long double sum = 0.0L;
        for (int k = 0; k < kCoefficients; ++k) sum += series[k] * chebyshev[k][i];
        monomial[static_cast<size_t>(piece * kCoefficients + i)] = static_cast<double>(sum);
      }
    }
  }
};

const PhiTable& phi_table() {
  static const PhiTable table;
  return table;
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

}  // namespace

void gelu_exact_inplace(float* x, int64_t count) {
  static const bool has_avx2 = __builtin_cpu_supports("avx2");
  const double* table = phi_table().monomial.data();
  if (has_avx2) {
    gelu_avx2(table, x, count);
    return;
  }
  for (int64_t i = 0; i < count; ++i) x[i] = gelu_from_table(table, x[i]);
}

void gelu_exact_inplace_portable(float* x, int64_t count) {
  const double* table = phi_table().monomial.data();
  for (int64_t i = 0; i < count; ++i) x[i] = gelu_from_table(table, x[i]);
}

float gelu_exact_reference(float x) {
  const double v = x;
  return static_cast<float>(0.5 * v * (1.0 + std::erf(v * M_SQRT1_2)));
}

}  // namespace sam2rt
