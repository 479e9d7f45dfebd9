#pragma once

#include <cstdint>

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

// The plain loop (double accumulation) head_dots is tested against.
void head_dots_reference(const HeadDotsArgs& args);

}  // namespace sam2rt
