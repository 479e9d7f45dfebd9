#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "kernels/simd_dispatch.h"

namespace sam2rt {

// A Linear layer applied to a handful of rows (the mask decoder's tokens: 1 to
// 64 rows, a few prompts' tokens stacked, against a 256 x 256 or 256 x 2048 weight). A GEMM library call costs
// more in dispatch and in packing the weight for every call than its few hundred
// thousand products; here the weight is packed once (pack_small_rows_weight) into
// blocks of kSmallRowsColumns output columns, each block's [in, 32] values one
// contiguous stream, and each step of the sum over `in` is one row of a block
// times a broadcast input value, all rows' outputs in registers.
constexpr int64_t kSmallRowsColumns = 32;

// PyTorch Linear weight [out, in] -> [ceil(out / 32), in, 32] (zeros past out).
Tensor pack_small_rows_weight(const Tensor& weight);

struct SmallRowsLinearArgs {
  int64_t rows = 0, in = 0, columns = 0;  // columns: how many outputs, from the first column of `packed`
  const float* x = nullptr;               // [rows, in], row stride ldx
  int64_t ldx = 0;
  const float* packed = nullptr;          // pack_small_rows_weight's blocks, from the block of the first column
  const float* bias = nullptr;            // [columns]
  float* y = nullptr;                     // [rows, columns], row stride ldy
  int64_t ldy = 0;
};

// Whether small_rows_linear runs on this CPU (AVX2 or AVX-512) for this many rows.
bool small_rows_linear_applies(int64_t rows);

// y = bias + x W (each output the sum over `in` in order, by fused multiply-adds,
// then the bias added): the same for any split of the columns, and the same on
// the AVX2 and AVX-512 paths.
void small_rows_linear(const SmallRowsLinearArgs& args);
// The path of `level` (capped by the CPU's; AVX2 at least), for tests.
void small_rows_linear(const SmallRowsLinearArgs& args, SimdLevel level);

// The plain loops (double sums) it is tested against.
void small_rows_linear_reference(const SmallRowsLinearArgs& args);

}  // namespace sam2rt
