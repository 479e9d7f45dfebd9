#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/bf16_gemm.h"
#include "kernels/simd.h"
#include "random_tensor.h"

namespace sam2rt {
namespace {

using testing::random_tensor;

// The packed bf16 GEMM against a double-precision product of the same
// bf16-rounded inputs: only the float32 accumulation may differ.
TEST(Bf16Gemm, MatchesDoubleProductOfRoundedInputs) {
  if (!bf16_gemm_supported()) GTEST_SKIP() << "this CPU has no AVX512_BF16";
  for (const int64_t m : {1, 3, 4, 5, 9}) {
    for (const int64_t k : {1, 2, 7, 64, 301}) {
      for (const int64_t n : {1, 16, 17, 96, 100, 200}) {
        const int64_t lda = k + 3, ldb = n + 5, ldc = n + 2;
        const Tensor a = random_tensor({m, lda}, 1), b = random_tensor({k, ldb}, 2);
        std::vector<uint16_t> a16(static_cast<size_t>(m * lda)), packed(static_cast<size_t>(bf16_pairs_size(k, n)));
        for (int64_t i = 0; i < m * lda; ++i) a16[static_cast<size_t>(i)] = simd::to_bf16(a[i]);
        pack_bf16_pairs(b.data(), ldb, k, n, packed.data());
        std::vector<float> c(static_cast<size_t>(m * ldc), 7.0f);
        gemm_bf16_packed(a16.data(), lda, m, k, packed.data(), n, c.data(), ldc);
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t j = 0; j < n; ++j) {
            double want = 0.0, magnitude = 0.0;
            for (int64_t p = 0; p < k; ++p) {
              const double term = static_cast<double>(simd::from_bf16(a16[static_cast<size_t>(i * lda + p)])) *
                                  simd::from_bf16(simd::to_bf16(b[p * ldb + j]));
              want += term;
              magnitude += std::fabs(term);
            }
            ASSERT_NEAR(c[static_cast<size_t>(i * ldc + j)], want, 1e-6 * magnitude + 1e-12)
                << m << "x" << k << "x" << n << " at " << i << "," << j;
          }
          for (int64_t j = n; j < ldc; ++j) ASSERT_EQ(c[static_cast<size_t>(i * ldc + j)], 7.0f) << "wrote past n";
        }
      }
    }
  }
}

TEST(Bf16Gemm, TransposedPackingEqualsPackingTheTranspose) {
  if (!bf16_gemm_supported()) GTEST_SKIP() << "this CPU has no AVX512_BF16";
  for (const int64_t k : {1, 6, 7}) {
    for (const int64_t n : {1, 17, 40}) {
      const Tensor bt = random_tensor({n, k + 2}, 4);
      Tensor b({k, n});
      for (int64_t p = 0; p < k; ++p)
        for (int64_t j = 0; j < n; ++j) b[p * n + j] = bt[j * (k + 2) + p];
      std::vector<uint16_t> direct(static_cast<size_t>(bf16_pairs_size(k, n)), 1);
      std::vector<uint16_t> transposed(direct.size(), 2);
      pack_bf16_pairs(b.data(), n, k, n, direct.data());
      pack_bf16_pairs_transposed(bt.data(), k + 2, k, n, transposed.data());
      EXPECT_EQ(direct, transposed) << k << "x" << n;
    }
  }
}

TEST(Bf16Gemm, RoundsLikeTheScalarConversion) {
  if (!bf16_gemm_supported()) GTEST_SKIP() << "this CPU has no AVX512_BF16";
  const Tensor x = random_tensor({1000}, 3, 100.0f);
  for (const int64_t count : {0, 1, 15, 16, 17, 1000}) {
    std::vector<uint16_t> fast(1001, 0xABCD);
    round_to_bf16(x.data(), count, fast.data());
    for (int64_t i = 0; i < count; ++i) ASSERT_EQ(fast[static_cast<size_t>(i)], simd::to_bf16(x[i])) << i;
    EXPECT_EQ(fast[static_cast<size_t>(count)], 0xABCD) << "wrote past count";
  }
}

}  // namespace
}  // namespace sam2rt
