#include "kernels/simd.h"

namespace sam2rt {

SimdLevel best_simd_level() {
  static const SimdLevel level = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl")) {
      return SimdLevel::avx512;
    }
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return SimdLevel::avx2;
    return SimdLevel::baseline;
  }();
  return level;
}

const char* simd_level_name(SimdLevel level) {
  switch (level) {
    case SimdLevel::avx512: return "avx512";
    case SimdLevel::avx2: return "avx2";
    case SimdLevel::baseline: break;
  }
  return "baseline";
}

}  // namespace sam2rt
