#include "kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/gemm.h"
#include "kernels/softmax.h"

namespace sam2rt {

namespace {
constexpr int64_t kQueryBlock = 64;
}

void attention(const AttentionArgs& a) {
  const int64_t blocks = (a.nq + kQueryBlock - 1) / kQueryBlock;
#pragma omp parallel
  {
    std::vector<float> scores(static_cast<size_t>(kQueryBlock * a.nk));
    std::vector<float> scaled_q(static_cast<size_t>(kQueryBlock * a.head_dim));
#pragma omp for collapse(2) schedule(dynamic)
    for (int64_t h = 0; h < a.heads; ++h) {
      for (int64_t blk = 0; blk < blocks; ++blk) {
        const int64_t q0 = blk * kQueryBlock;
        const int64_t rows = std::min(kQueryBlock, a.nq - q0);
        // PyTorch scales q before the product (q * scale) @ k^T.
        for (int64_t i = 0; i < rows; ++i) {
          const float* src = a.q + (q0 + i) * a.ldq + h * a.head_dim;
          for (int64_t d = 0; d < a.head_dim; ++d) scaled_q[i * a.head_dim + d] = src[d] * a.scale;
        }
        gemm({.m = rows, .n = a.nk, .k = a.head_dim, .a = scaled_q.data(), .lda = a.head_dim,
              .b = a.k + h * a.head_dim, .ldb = a.ldk, .b_transposed = true, .c = scores.data(), .ldc = a.nk});
        softmax_rows(scores.data(), rows, a.nk, a.nk);
        gemm({.m = rows, .n = a.head_dim, .k = a.nk, .a = scores.data(), .lda = a.nk, .b = a.v + h * a.head_dim,
              .ldb = a.ldv, .b_transposed = false, .c = a.out + q0 * a.ldo + h * a.head_dim, .ldc = a.ldo});
      }
    }
  }
}

void attention_reference(const AttentionArgs& a) {
  std::vector<double> scores(static_cast<size_t>(a.nk));
  for (int64_t h = 0; h < a.heads; ++h) {
    for (int64_t i = 0; i < a.nq; ++i) {
      const float* q = a.q + i * a.ldq + h * a.head_dim;
      double max = -INFINITY;
      for (int64_t j = 0; j < a.nk; ++j) {
        const float* k = a.k + j * a.ldk + h * a.head_dim;
        double dot = 0.0;
        for (int64_t d = 0; d < a.head_dim; ++d) dot += static_cast<double>(q[d]) * k[d];
        scores[j] = dot * a.scale;
        max = std::max(max, scores[j]);
      }
      double sum = 0.0;
      for (int64_t j = 0; j < a.nk; ++j) sum += (scores[j] = std::exp(scores[j] - max));
      float* out = a.out + i * a.ldo + h * a.head_dim;
      for (int64_t d = 0; d < a.head_dim; ++d) {
        double acc = 0.0;
        for (int64_t j = 0; j < a.nk; ++j) acc += scores[j] * a.v[j * a.ldv + h * a.head_dim + d];
        out[d] = static_cast<float>(acc / sum);
      }
    }
  }
}

}  // namespace sam2rt
