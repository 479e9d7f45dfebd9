#include "kernels/bf16.h"

#include "kernels/simd.h"

namespace sam2rt {

void convert_to_bf16(const float* src, uint16_t* dst, int64_t n) {
#pragma omp parallel for schedule(dynamic, 1 << 14) if (n > (1 << 16))
  for (int64_t i = 0; i < n; ++i) dst[i] = simd::to_bf16(src[i]);
}

void convert_from_bf16(const uint16_t* src, float* dst, int64_t n) {
#pragma omp parallel for schedule(dynamic, 1 << 14) if (n > (1 << 16))
  for (int64_t i = 0; i < n; ++i) dst[i] = simd::from_bf16(src[i]);
}

}  // namespace sam2rt
