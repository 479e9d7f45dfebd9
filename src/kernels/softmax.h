#pragma once

#include <cstdint>

#include "kernels/simd_dispatch.h"

namespace sam2rt {

// In place, row by row: x[r, :] = exp(x[r, :] - max) / sum, single precision
// with a vectorised e^x (simd.h). `ld` is the row stride in floats.
void softmax_rows(float* x, int64_t rows, int64_t cols, int64_t ld);
// The same with a chosen code path (tests force each one the CPU supports).
void softmax_rows(float* x, int64_t rows, int64_t cols, int64_t ld, SimdLevel level);

// In place over `groups` consecutive groups of `group` floats each: a softmax of
// each group. For many short groups (the decoder's few tokens per head), where a
// row-wise vector softmax would run entirely in its scalar tail.
void softmax_groups(float* x, int64_t groups, int64_t group);
void softmax_groups(float* x, int64_t groups, int64_t group, SimdLevel level);

// The numerators of a row softmax, for a product that divides afterwards:
// out[r, :] = bfloat16(exp(x[r, :] - max_r)) (round to nearest even) and
// sums[r] = the float32 sum of the unrounded exponentials. x is not modified.
void exp_rows_to_bf16(const float* x, int64_t rows, int64_t cols, int64_t ld, uint16_t* out, int64_t ldo,
                      float* sums);
void exp_rows_to_bf16(const float* x, int64_t rows, int64_t cols, int64_t ld, uint16_t* out, int64_t ldo,
                      float* sums, SimdLevel level);

// Double-precision reference.
void softmax_rows_reference(float* x, int64_t rows, int64_t cols, int64_t ld);

}  // namespace sam2rt
