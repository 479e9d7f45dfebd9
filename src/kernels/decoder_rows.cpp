#include "kernels/decoder_rows.h"

#include <immintrin.h>

#include "kernels/norm.h"
#include "kernels/simd.h"

namespace sam2rt {

namespace {

// The baseline build targets SSE2; eight floats at a time where the CPU allows.
// out may alias a or b.
__attribute__((target("avx2"))) void add_rows_avx2(const float* a, const float* b, int64_t count, float* out) {
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) _mm256_storeu_ps(out + i, _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
  for (; i < count; ++i) out[i] = a[i] + b[i];
}

}  // namespace

void add_layer_norm_rows(float* x, const float* y, int64_t rows, int64_t c, const float* weight, const float* bias,
                         float eps) {
  if (y != nullptr) add_rows_inplace(x, y, rows * c);
  layer_norm_rows(x, c, rows, c, weight, bias, eps, x, c);
}

void add_rows(const float* a, const float* b, int64_t count, float* out) {
  static const bool has_avx2 = best_simd_level() >= SimdLevel::avx2;
  if (has_avx2) {
    add_rows_avx2(a, b, count, out);
    return;
  }
  for (int64_t i = 0; i < count; ++i) out[i] = a[i] + b[i];
}

void add_rows_inplace(float* x, const float* y, int64_t count) { add_rows(x, y, count, x); }

}  // namespace sam2rt
