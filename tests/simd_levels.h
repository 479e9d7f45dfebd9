#pragma once

#include <cstring>
#include <vector>

#include "core/tensor.h"
#include "kernels/simd_dispatch.h"

namespace sam2rt::testing {

// The SIMD levels this CPU can run (capped by SAM2RT_MAX_SIMD), lowest first:
// kernels with per-level paths are tested on each.
inline std::vector<SimdLevel> available_levels() {
  std::vector<SimdLevel> levels;
  for (SimdLevel l : {SimdLevel::baseline, SimdLevel::avx2, SimdLevel::avx512}) {
    if (l <= best_simd_level()) levels.push_back(l);
  }
  return levels;
}

// Whether two tensors hold the same bits: the vector paths that sum in the
// same order must agree exactly, not within a tolerance.
inline bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), sizeof(float) * a.numel()) == 0;
}

}  // namespace sam2rt::testing
