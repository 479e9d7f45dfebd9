#include "kernels/softmax.h"

#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "kernels/simd.h"

// Vector helpers are inlined into per-ISA functions (simd.h): no ABI crossing.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace sam2rt {

namespace {

template <int Lanes>
[[gnu::always_inline]] inline float row_max(const float* x, int64_t n) {
  using V = typename simd::Types<Lanes>::F;
  const int64_t vec_end = n / Lanes * Lanes;
  float max = -INFINITY;
  if (vec_end > 0) {
    V m = simd::load<V>(x);
    for (int64_t i = Lanes; i < vec_end; i += Lanes) m = simd::max(m, simd::load<V>(x + i));
    max = simd::reduce_max(m);
  }
  for (int64_t i = vec_end; i < n; ++i) max = std::max(max, x[i]);
  return max;
}

template <int Lanes>
[[gnu::always_inline]] inline void softmax_row(float* x, int64_t n) {
  using V = typename simd::Types<Lanes>::F;
  const int64_t vec_end = n / Lanes * Lanes;
  const float max = row_max<Lanes>(x, n);

  V sum = V{};
  for (int64_t i = 0; i < vec_end; i += Lanes) {
    const V e = simd::exp_fused(simd::load<V>(x + i) - max);
    simd::store(x + i, e);
    sum += e;
  }
  float total = simd::reduce_add(sum);
  for (int64_t i = vec_end; i < n; ++i) {
    V tail = simd::splat<V>(x[i] - max);
    x[i] = simd::exp_fused(tail)[0];
    total += x[i];
  }
  const float inv = 1.0f / total;
  for (int64_t i = 0; i < vec_end; i += Lanes) simd::store(x + i, simd::load<V>(x + i) * inv);
  for (int64_t i = vec_end; i < n; ++i) x[i] *= inv;
}

// Round to nearest even of finite floats, lane-wise (simd::to_bf16 without the
// NaN case: exponentials of finite scores are finite).
template <class VI>
[[gnu::always_inline]] inline VI bf16_bits(VI bits) {
  return (bits + 0x7fff + ((bits >> 16) & 1)) >> 16;
}

template <int Lanes>
[[gnu::always_inline]] inline float exp_row_to_bf16(const float* x, int64_t n, uint16_t* out) {
  using V = typename simd::Types<Lanes>::F;
  using VI = typename simd::Types<Lanes>::I;
  const int64_t vec_end = n / Lanes * Lanes;
  const float max = row_max<Lanes>(x, n);
  V sum = V{};
  for (int64_t i = 0; i < vec_end; i += Lanes) {
    const V e = simd::exp<V, VI, 5>(simd::load<V>(x + i) - max);
    sum += e;
    using Narrow [[gnu::vector_size(Lanes * 2)]] = uint16_t;
    const Narrow rounded = __builtin_convertvector(bf16_bits(std::bit_cast<VI>(e)), Narrow);
    std::memcpy(out + i, &rounded, sizeof rounded);
  }
  float total = simd::reduce_add(sum);
  for (int64_t i = vec_end; i < n; ++i) {
    const float e = simd::exp<V, VI, 5>(simd::splat<V>(x[i] - max))[0];
    total += e;
    out[i] = simd::to_bf16(e);
  }
  return total;
}

[[gnu::target("avx512f,avx512bw,avx512vl")]] void exp_to_bf16_avx512(const float* x, int64_t rows, int64_t cols,
                                                                     int64_t ld, uint16_t* out, int64_t ldo,
                                                                     float* sums) {
  for (int64_t r = 0; r < rows; ++r) sums[r] = exp_row_to_bf16<16>(x + r * ld, cols, out + r * ldo);
}

[[gnu::target("avx2,fma")]] void exp_to_bf16_avx2(const float* x, int64_t rows, int64_t cols, int64_t ld,
                                                   uint16_t* out, int64_t ldo, float* sums) {
  for (int64_t r = 0; r < rows; ++r) sums[r] = exp_row_to_bf16<8>(x + r * ld, cols, out + r * ldo);
}

void exp_to_bf16_baseline(const float* x, int64_t rows, int64_t cols, int64_t ld, uint16_t* out, int64_t ldo,
                          float* sums) {
  for (int64_t r = 0; r < rows; ++r) sums[r] = exp_row_to_bf16<4>(x + r * ld, cols, out + r * ldo);
}

// Shift each group by its max (scalar: groups are short), one vector e^x over
// the whole buffer, then normalise each group.
template <int Lanes>
[[gnu::always_inline]] inline void softmax_groups_impl(float* x, int64_t groups, int64_t group) {
  using V = typename simd::Types<Lanes>::F;
  for (int64_t g = 0; g < groups; ++g) {
    float* row = x + g * group;
    const float max = *std::max_element(row, row + group);
    for (int64_t i = 0; i < group; ++i) row[i] -= max;
  }
  const int64_t n = groups * group, vec_end = n / Lanes * Lanes;
  for (int64_t i = 0; i < vec_end; i += Lanes) simd::store(x + i, simd::exp_fused(simd::load<V>(x + i)));
  for (int64_t i = vec_end; i < n; ++i) x[i] = simd::exp_fused(simd::splat<V>(x[i]))[0];
  for (int64_t g = 0; g < groups; ++g) {
    float* row = x + g * group;
    float total = 0.0f;
    for (int64_t i = 0; i < group; ++i) total += row[i];
    const float inv = 1.0f / total;
    for (int64_t i = 0; i < group; ++i) row[i] *= inv;
  }
}

// GCC 12's AVX-512 intrinsics start some results from an "undefined" vector,
// which it then reports as maybe-uninitialized once inlined.
#pragma GCC diagnostic push
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
// Groups of 8 (the decoder's tokens for a one-point or box prompt), two per
// register: the group's max and sum spread to its 8 lanes by three lane swaps
// (lane ^ 4, ^ 2, ^ 1) each, instead of scalar passes per group.
[[gnu::target("avx512f,avx512bw,avx512vl"), gnu::flatten]] void softmax_groups_of_8_avx512(float* x, int64_t groups) {
  using V = simd::Types<16>::F;
  const __m512i lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i swap[3] = {_mm512_xor_si512(lanes, _mm512_set1_epi32(4)),
                           _mm512_xor_si512(lanes, _mm512_set1_epi32(2)),
                           _mm512_xor_si512(lanes, _mm512_set1_epi32(1))};
  int64_t g = 0;
  for (; g + 2 <= groups; g += 2) {
    float* p = x + g * 8;
    const __m512 v = _mm512_loadu_ps(p);
    __m512 max = v;
    for (const __m512i& s : swap) max = _mm512_max_ps(max, _mm512_permutexvar_ps(s, max));
    const __m512 e = std::bit_cast<__m512>(simd::exp_fused(std::bit_cast<V>(_mm512_sub_ps(v, max))));
    __m512 sum = e;
    for (const __m512i& s : swap) sum = _mm512_add_ps(sum, _mm512_permutexvar_ps(s, sum));
    _mm512_storeu_ps(p, _mm512_mul_ps(e, _mm512_div_ps(_mm512_set1_ps(1.0f), sum)));
  }
  if (g < groups) softmax_groups_impl<16>(x + g * 8, groups - g, 8);
}
#pragma GCC diagnostic pop

[[gnu::target("avx512f,avx512bw,avx512vl"), gnu::flatten]] void softmax_groups_avx512(float* x, int64_t groups,
                                                                                    int64_t group) {
  if (group == 8) {
    softmax_groups_of_8_avx512(x, groups);
    return;
  }
  softmax_groups_impl<16>(x, groups, group);
}

// Lane k of 8 exchanged with lane k ^ 4, k ^ 2, k ^ 1.
[[gnu::target("avx2,fma"), gnu::always_inline]] inline __m256 swap4(__m256 v) {
  return _mm256_permute2f128_ps(v, v, 1);
}
[[gnu::target("avx2,fma"), gnu::always_inline]] inline __m256 swap2(__m256 v) {
  return _mm256_permute_ps(v, _MM_SHUFFLE(1, 0, 3, 2));
}
[[gnu::target("avx2,fma"), gnu::always_inline]] inline __m256 swap1(__m256 v) {
  return _mm256_permute_ps(v, _MM_SHUFFLE(2, 3, 0, 1));
}

// A group of 8 per register, the max and sum spread by the same three lane
// swaps in the same order as the AVX-512 path, which it therefore equals bit for
// bit.
[[gnu::target("avx2,fma"), gnu::flatten]] void softmax_groups_of_8_avx2(float* x, int64_t groups) {
  using V = simd::Types<8>::F;
  for (int64_t g = 0; g < groups; ++g) {
    float* p = x + g * 8;
    const __m256 v = _mm256_loadu_ps(p);
    __m256 max = _mm256_max_ps(v, swap4(v));
    max = _mm256_max_ps(max, swap2(max));
    max = _mm256_max_ps(max, swap1(max));
    const __m256 e = std::bit_cast<__m256>(simd::exp_fused(std::bit_cast<V>(_mm256_sub_ps(v, max))));
    __m256 sum = _mm256_add_ps(e, swap4(e));
    sum = _mm256_add_ps(sum, swap2(sum));
    sum = _mm256_add_ps(sum, swap1(sum));
    _mm256_storeu_ps(p, _mm256_mul_ps(e, _mm256_div_ps(_mm256_set1_ps(1.0f), sum)));
  }
}

[[gnu::target("avx2,fma"), gnu::flatten]] void softmax_groups_avx2(float* x, int64_t groups, int64_t group) {
  if (group == 8) {
    softmax_groups_of_8_avx2(x, groups);
    return;
  }
  softmax_groups_impl<8>(x, groups, group);
}

void softmax_groups_baseline(float* x, int64_t groups, int64_t group) { softmax_groups_impl<4>(x, groups, group); }

[[gnu::target("avx512f,avx512bw,avx512vl"), gnu::flatten]] void softmax_avx512(float* x, int64_t rows, int64_t cols,
                                                                             int64_t ld) {
  for (int64_t r = 0; r < rows; ++r) softmax_row<16>(x + r * ld, cols);
}

[[gnu::target("avx2,fma"), gnu::flatten]] void softmax_avx2(float* x, int64_t rows, int64_t cols, int64_t ld) {
  for (int64_t r = 0; r < rows; ++r) softmax_row<8>(x + r * ld, cols);
}

void softmax_baseline(float* x, int64_t rows, int64_t cols, int64_t ld) {
  for (int64_t r = 0; r < rows; ++r) softmax_row<4>(x + r * ld, cols);
}

using SoftmaxRows = void (*)(float*, int64_t, int64_t, int64_t);
const KernelTable<SoftmaxRows> kSoftmaxRows{
    .baseline = softmax_baseline, .avx2 = softmax_avx2, .avx512 = softmax_avx512};

using SoftmaxGroups = void (*)(float*, int64_t, int64_t);
const KernelTable<SoftmaxGroups> kSoftmaxGroups{
    .baseline = softmax_groups_baseline, .avx2 = softmax_groups_avx2, .avx512 = softmax_groups_avx512};

using ExpRowsToBf16 = void (*)(const float*, int64_t, int64_t, int64_t, uint16_t*, int64_t, float*);
const KernelTable<ExpRowsToBf16> kExpRowsToBf16{
    .baseline = exp_to_bf16_baseline, .avx2 = exp_to_bf16_avx2, .avx512 = exp_to_bf16_avx512};

}  // namespace

void softmax_rows(float* x, int64_t rows, int64_t cols, int64_t ld, SimdLevel level) {
  kSoftmaxRows.at(level)(x, rows, cols, ld);
}

void softmax_rows(float* x, int64_t rows, int64_t cols, int64_t ld) { kSoftmaxRows.best()(x, rows, cols, ld); }

void softmax_groups(float* x, int64_t groups, int64_t group, SimdLevel level) {
  if (group <= 0) return;
  kSoftmaxGroups.at(level)(x, groups, group);
}

void softmax_groups(float* x, int64_t groups, int64_t group) { softmax_groups(x, groups, group, best_simd_level()); }

void exp_rows_to_bf16(const float* x, int64_t rows, int64_t cols, int64_t ld, uint16_t* out, int64_t ldo,
                      float* sums, SimdLevel level) {
  kExpRowsToBf16.at(level)(x, rows, cols, ld, out, ldo, sums);
}

void exp_rows_to_bf16(const float* x, int64_t rows, int64_t cols, int64_t ld, uint16_t* out, int64_t ldo,
                      float* sums) {
  kExpRowsToBf16.best()(x, rows, cols, ld, out, ldo, sums);
}

void softmax_rows_reference(float* x, int64_t rows, int64_t cols, int64_t ld) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = x + r * ld;
    const double max = *std::max_element(row, row + cols);
    double sum = 0.0;
    for (int64_t i = 0; i < cols; ++i) sum += std::exp(row[i] - max);
    for (int64_t i = 0; i < cols; ++i) row[i] = static_cast<float>(std::exp(row[i] - max) / sum);
  }
}

}  // namespace sam2rt
