#pragma once

#include <cstdint>

#include "kernels/simd_dispatch.h"

namespace sam2rt {

// Products that respect the attention heads of the mask decoder: row i of x holds
// `heads` consecutive slices of head_dim values, and each head meets only its own
// `per_head` vectors. As one dense GEMM they would be a block-diagonal matrix,
// mostly zeros; here every head is its own small GEMM.

struct HeadDotsArgs {
  int64_t rows = 0, heads = 1, head_dim = 0, per_head = 0;
  const float* x = nullptr;        // [rows, heads * head_dim], row stride ldx
  int64_t ldx = 0;
  const float* vectors = nullptr;  // [heads * per_head, head_dim]: head h's vectors are rows h*per_head..
  float* out = nullptr;            // [rows, heads * per_head], row stride ldo
  int64_t ldo = 0;
};

// out[i, h * per_head + j] = x[i, h * head_dim : (h + 1) * head_dim] . vectors[h * per_head + j]
void head_dots(const HeadDotsArgs& args);
// The path of `level` (capped by the CPU's), for tests: the decoder's shapes
// (16-channel heads, 1 to 8 vectors each) are vectorised at AVX2 and AVX-512,
// and both round alike; any other shape runs per-head GEMMs.
void head_dots(const HeadDotsArgs& args, SimdLevel level);

// The plain loop (double accumulation) head_dots is tested against.
void head_dots_reference(const HeadDotsArgs& args);

// The transpose of head_dots: weights w [rows, heads * per_head] (row stride ldw),
// optionally scaled per row, sum rows of x [rows, heads * head_dim] into each
// head's per_head outputs:
//   out[j, h * head_dim + d] += sum_i row_scale[i] * w[i, h * per_head + j] * x[i, h * head_dim + d]
// (out row stride ldo; row_scale null means 1). An attention's probability-weighted
// sum of values when its probabilities are stored one image row per row.
struct HeadWeightedSumsArgs {
  int64_t rows = 0, heads = 1, head_dim = 0, per_head = 0;
  const float* w = nullptr;
  int64_t ldw = 0;
  const float* row_scale = nullptr;
  const float* x = nullptr;
  int64_t ldx = 0;
  float* out = nullptr;  // [per_head, heads * head_dim]
  int64_t ldo = 0;
};
void head_weighted_sums(const HeadWeightedSumsArgs& args);
void head_weighted_sums(const HeadWeightedSumsArgs& args, SimdLevel level);
void head_weighted_sums_reference(const HeadWeightedSumsArgs& args);

}  // namespace sam2rt
