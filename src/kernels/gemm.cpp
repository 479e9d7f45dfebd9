#include "kernels/gemm.h"

#include <oneapi/dnnl/dnnl.h>

#include <string>

#include "core/error.h"

namespace sam2rt {

void gemm(const GemmArgs& g) {
  if (g.m == 0 || g.n == 0) return;
  if (g.k == 0) {
    if (!g.accumulate) {
      for (int64_t i = 0; i < g.m; ++i)
        for (int64_t j = 0; j < g.n; ++j) g.c[i * g.ldc + j] = 0.0f;
    }
    return;
  }
  dnnl_status_t status = dnnl_sgemm(g.a_transposed ? 'T' : 'N', g.b_transposed ? 'T' : 'N', g.m, g.n, g.k, 1.0f,
                                    g.a, g.lda, g.b, g.ldb, g.accumulate ? 1.0f : 0.0f, g.c, g.ldc);
  if (status != dnnl_success) throw Error("oneDNN sgemm failed with status " + std::to_string(status));
}

void gemm_reference(const GemmArgs& g) {
  for (int64_t i = 0; i < g.m; ++i) {
    for (int64_t j = 0; j < g.n; ++j) {
      double sum = g.accumulate ? g.c[i * g.ldc + j] : 0.0;
      for (int64_t p = 0; p < g.k; ++p) {
        float b = g.b_transposed ? g.b[j * g.ldb + p] : g.b[p * g.ldb + j];
        const float a = g.a_transposed ? g.a[p * g.lda + i] : g.a[i * g.lda + p];
        sum += static_cast<double>(a) * b;
      }
      g.c[i * g.ldc + j] = static_cast<float>(sum);
    }
  }
}

}  // namespace sam2rt
