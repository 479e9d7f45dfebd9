#include "kernels/decoder_head_products.h"

#include "kernels/gemm.h"

namespace sam2rt {

void head_dots(const HeadDotsArgs& a) {
  for (int64_t h = 0; h < a.heads; ++h) {
    gemm({.m = a.rows, .n = a.per_head, .k = a.head_dim, .a = a.x + h * a.head_dim, .lda = a.ldx,
          .b = a.vectors + h * a.per_head * a.head_dim, .ldb = a.head_dim, .b_transposed = true,
          .c = a.out + h * a.per_head, .ldc = a.ldo});
  }
}

void head_dots_reference(const HeadDotsArgs& a) {
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t h = 0; h < a.heads; ++h)
      for (int64_t j = 0; j < a.per_head; ++j) {
        const float* x = a.x + i * a.ldx + h * a.head_dim;
        const float* v = a.vectors + (h * a.per_head + j) * a.head_dim;
        double sum = 0;
        for (int64_t d = 0; d < a.head_dim; ++d) sum += static_cast<double>(x[d]) * v[d];
        a.out[i * a.ldo + h * a.per_head + j] = static_cast<float>(sum);
      }
}

}  // namespace sam2rt
