#pragma once

#include <cstdint>

namespace sam2rt {

// float32 -> bfloat16, round to nearest even, n elements, split over the OpenMP threads.
void convert_to_bf16(const float* src, uint16_t* dst, int64_t n);
// bfloat16 -> float32 (exact).
void convert_from_bf16(const uint16_t* src, float* dst, int64_t n);

}  // namespace sam2rt
