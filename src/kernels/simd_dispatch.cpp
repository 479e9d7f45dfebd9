#include "kernels/simd_dispatch.h"

#include <algorithm>
#include <cstdlib>
#include <string_view>

namespace sam2rt {

namespace {

SimdLevel cpu_simd_level() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512dq")) {
    return SimdLevel::avx512;
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return SimdLevel::avx2;
  return SimdLevel::baseline;
}

SimdLevel simd_level_cap() {
  const char* cap = std::getenv("SAM2RT_MAX_SIMD");
  if (cap == nullptr) return SimdLevel::avx512;
  const std::string_view name(cap);
  if (name == "baseline") return SimdLevel::baseline;
  if (name == "avx2") return SimdLevel::avx2;
  return SimdLevel::avx512;
}

}  // namespace

SimdLevel best_simd_level() {
  static const SimdLevel level = std::min(cpu_simd_level(), simd_level_cap());
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

bool cpu_has_avx512_bf16() {
  static const bool has = best_simd_level() >= SimdLevel::avx512 && __builtin_cpu_supports("avx512bf16");
  return has;
}

}  // namespace sam2rt
