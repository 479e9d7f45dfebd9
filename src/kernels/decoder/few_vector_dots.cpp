#include "kernels/decoder/few_vector_dots.h"

#include <immintrin.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/gemm.h"
#include "kernels/simd_dispatch.h"

namespace sam2rt {

namespace {

// The lanes `stored` of sum to out, added to what it holds when accumulating.
[[gnu::target("avx2,fma"), gnu::always_inline]] inline void store_row(float* out, __m256i stored, bool accumulate,
                                                                      __m256 sum) {
  if (accumulate) sum = _mm256_add_ps(_mm256_maskload_ps(out, stored), sum);
  _mm256_maskstore_ps(out, stored, sum);
}

// Lane j of row i's register accumulates x[i, d] * vectors[j, d] over d: the
// row's component broadcast from memory, the vectors' column d one load for
// eight rows, whose eight chains of FMAs cover the FMA latency on both pipes.
[[gnu::target("avx2,fma")]] void few_vector_dots_avx2(const FewVectorDotsArgs& a) {
  // columns[d] = vectors[:, d] in 8 lanes, zero past count.
  std::vector<float> columns(static_cast<size_t>(a.k * kMaxFewVectors), 0.0f);
  for (int64_t j = 0; j < a.count; ++j)
    for (int64_t d = 0; d < a.k; ++d) columns[static_cast<size_t>(d * kMaxFewVectors + j)] = a.vectors[j * a.k + d];
  const float* const v = columns.data();
  const __m256i stored = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(a.count)),
                                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  constexpr int64_t kRowsInFlight = 8;
  int64_t i = 0;
  for (; i + kRowsInFlight <= a.rows; i += kRowsInFlight) {
    const float* const x = a.x + i * a.ldx;
    __m256 acc[kRowsInFlight];
    const __m256 first = _mm256_loadu_ps(v);
    for (int64_t r = 0; r < kRowsInFlight; ++r) acc[r] = _mm256_mul_ps(_mm256_broadcast_ss(x + r * a.ldx), first);
    for (int64_t d = 1; d < a.k; ++d) {
      const __m256 column = _mm256_loadu_ps(v + d * kMaxFewVectors);
      for (int64_t r = 0; r < kRowsInFlight; ++r) {
        acc[r] = _mm256_fmadd_ps(_mm256_broadcast_ss(x + r * a.ldx + d), column, acc[r]);
      }
    }
    for (int64_t r = 0; r < kRowsInFlight; ++r) store_row(a.out + (i + r) * a.ldo, stored, a.accumulate, acc[r]);
  }
  for (; i < a.rows; ++i) {
    const float* const x = a.x + i * a.ldx;
    __m256 acc = _mm256_mul_ps(_mm256_broadcast_ss(x), _mm256_loadu_ps(v));
    for (int64_t d = 1; d < a.k; ++d) {
      acc = _mm256_fmadd_ps(_mm256_broadcast_ss(x + d), _mm256_loadu_ps(v + d * kMaxFewVectors), acc);
    }
    store_row(a.out + i * a.ldo, stored, a.accumulate, acc);
  }
}

void few_vector_dots_gemm(const FewVectorDotsArgs& a) {
  gemm({.m = a.rows, .n = a.count, .k = a.k, .a = a.x, .lda = a.ldx, .b = a.vectors, .ldb = a.k,
        .b_transposed = true, .c = a.out, .ldc = a.ldo, .accumulate = a.accumulate});
}

using FewVectorDots = void (*)(const FewVectorDotsArgs&);
const KernelTable<FewVectorDots> kFewVectorDots{.baseline = few_vector_dots_gemm, .avx2 = few_vector_dots_avx2};

}  // namespace

void few_vector_dots(const FewVectorDotsArgs& a) {
  if (a.count < 1 || a.count > kMaxFewVectors) {
    throw Error("few_vector_dots: " + std::to_string(a.count) + " vectors (1 to " +
                std::to_string(kMaxFewVectors) + ")");
  }
  if (a.rows <= 0) return;
  if (a.k <= 0) return few_vector_dots_gemm(a);
  kFewVectorDots.best()(a);
}

void few_vector_dots_reference(const FewVectorDotsArgs& a) {
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t j = 0; j < a.count; ++j) {
      double sum = a.accumulate ? a.out[i * a.ldo + j] : 0.0;
      for (int64_t d = 0; d < a.k; ++d) sum += static_cast<double>(a.x[i * a.ldx + d]) * a.vectors[j * a.k + d];
      a.out[i * a.ldo + j] = static_cast<float>(sum);
    }
}

}  // namespace sam2rt
