#pragma once

#include <cstdint>

namespace sam2rt {

// Rows of x against a few vectors: out[i, j] (+)= x[i, :] . vectors[j, :] for
// j < count <= kMaxFewVectors. The mask decoder's final attention scores the
// image rows' basis coefficients against the IoU token's 8 heads this way: a
// GEMM with N = 8 spent on its blocking three times the time of its products.
struct FewVectorDotsArgs {
  int64_t rows = 0, k = 0, count = 0;
  const float* x = nullptr;        // [rows, k], row stride ldx
  int64_t ldx = 0;
  const float* vectors = nullptr;  // [count, k]
  float* out = nullptr;            // [rows, count], row stride ldo
  int64_t ldo = 0;
  bool accumulate = false;
};
inline constexpr int64_t kMaxFewVectors = 8;

// count must be in [1, kMaxFewVectors]. AVX2 and AVX-512 CPUs run one 8-lane
// register per row (each lane's sum over k in order, one rounding per step);
// others a GEMM.
void few_vector_dots(const FewVectorDotsArgs& args);

// The plain loop (double accumulation) it is tested against.
void few_vector_dots_reference(const FewVectorDotsArgs& args);

}  // namespace sam2rt
