#pragma once

#include <cstdint>

namespace sam2rt {

// Softmax down each column of x [rows, cols] (row stride ld), in place: for an
// attention whose probabilities are stored one key per row, each query a column.
// The exponential of kernels/simd.h, the maximum and the sum per column taken
// row by row in single precision: the same values on every SIMD path.
void softmax_columns(float* x, int64_t rows, int64_t cols, int64_t ld);

// The plain loops (double sums, std::exp) the kernel is tested against.
void softmax_columns_reference(float* x, int64_t rows, int64_t cols, int64_t ld);

}  // namespace sam2rt
