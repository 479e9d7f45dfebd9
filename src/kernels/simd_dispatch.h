#pragma once

// The one place that decides which SIMD code runs. The CPU's level is detected
// once (best_simd_level); a kernel with per-level code registers its entry
// points in a KernelTable, one entry per level, and looks them up there, so no
// kernel file inspects the CPU itself (as XNNPACK's micro-kernel tables and
// ncnn's per-ISA layer registry keep that choice out of the kernels).

#include <array>
#include <cstddef>

namespace sam2rt {

enum class SimdLevel { baseline = 0, avx2 = 1, avx512 = 2 };
inline constexpr int kSimdLevelCount = 3;

// The widest level this CPU supports (cpuid, detected once; avx512 means its F,
// BW, VL and DQ parts, avx2 includes FMA), capped by the environment variable
// SAM2RT_MAX_SIMD=avx2|baseline when set (like oneDNN's ONEDNN_MAX_CPU_ISA): the
// code paths of older CPUs can then be run and tested on a newer one.
SimdLevel best_simd_level();
// "baseline" (plain x86-64: SSE2), "avx2" or "avx512", for logs and test names.
const char* simd_level_name(SimdLevel level);

// Whether the avx512 level is chosen and the CPU also has AVX512_BF16's dot
// products (an extension beside the levels: Zen 4 and Sapphire Rapids on).
bool cpu_has_avx512_bf16();

// One kernel's implementations, one entry per SIMD level. An entry may be
// nullptr where a level has no code of its own: the next lower level's serves.
template <class Fn>
struct KernelTable {
  Fn baseline = nullptr;
  Fn avx2 = nullptr;
  Fn avx512 = nullptr;

  // The entry of `level` capped at best_simd_level() (asking for more than the
  // CPU has gets what it has), or of the nearest lower level with one; nullptr
  // when none has.
  Fn at(SimdLevel level) const {
    const std::array<Fn, kSimdLevelCount> entries = {baseline, avx2, avx512};
    const int cap = static_cast<int>(level < best_simd_level() ? level : best_simd_level());
    for (int l = cap; l >= 0; --l) {
      if (entries[static_cast<std::size_t>(l)] != nullptr) return entries[static_cast<std::size_t>(l)];
    }
    return nullptr;
  }

  // The entry the CPU runs.
  Fn best() const { return at(best_simd_level()); }
};

}  // namespace sam2rt
