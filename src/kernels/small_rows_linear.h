#pragma once

#include <cstdint>

namespace sam2rt {

// A Linear layer applied to a handful of rows (the mask decoder's tokens: 1 to
// ~16 rows against a 256 x 256 or 256 x 2048 weight). A GEMM library call costs
// more in dispatch and in packing the weight for every call than its few hundred
// thousand products; here the weight is transposed once ([in, out], see
// transpose_linear_weight) and each step of the sum over `in` is one row of it
// times a broadcast input value, all rows' outputs in registers.
struct SmallRowsLinearArgs {
  int64_t rows = 0, in = 0, columns = 0;  // columns: how many outputs (from column 0 of the pointers below)
  const float* x = nullptr;               // [rows, in], row stride ldx
  int64_t ldx = 0;
  const float* weight_t = nullptr;        // [in, *], row stride ldw
  int64_t ldw = 0;
  const float* bias = nullptr;            // [columns]
  float* y = nullptr;                     // [rows, columns], row stride ldy
  int64_t ldy = 0;
};

// Whether small_rows_linear runs on this CPU (AVX-512) for this many rows.
bool small_rows_linear_applies(int64_t rows);

// y = bias + x W (each output the sum over `in` in order, by fused multiply-adds,
// then the bias added): the same for any split of the columns.
void small_rows_linear(const SmallRowsLinearArgs& args);

// The plain loops (double sums) it is tested against.
void small_rows_linear_reference(const SmallRowsLinearArgs& args);

}  // namespace sam2rt
