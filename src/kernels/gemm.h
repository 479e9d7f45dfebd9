#pragma once

#include <cstdint>

namespace sam2rt {

// C[M,N] = op(A) * op(B) (+ C when accumulate), all row-major float32.
// op(A) = A^T when A is stored [K,M], else A [M,K];
// op(B) = B^T when B is stored [N,K] (a PyTorch Linear weight), else B [K,N].
struct GemmArgs {
  int64_t m = 0, n = 0, k = 0;
  const float* a = nullptr;
  int64_t lda = 0;
  const float* b = nullptr;
  int64_t ldb = 0;
  bool b_transposed = true;
  bool a_transposed = false;
  float* c = nullptr;
  int64_t ldc = 0;
  bool accumulate = false;
};

void gemm(const GemmArgs& args);

// The plain triple loop (double accumulation) the fast path is tested against.
void gemm_reference(const GemmArgs& args);

}  // namespace sam2rt
