#pragma once

#include <cstdint>

namespace sam2rt {

// A softmax down each column of a tall matrix, one block of rows at a time: an
// attention whose scores are stored one key (image row) per row, each query a
// column, taken as flash-decoding does. Each block keeps its column maxima and
// its sums of exponentials; the blocks' products with the values are combined
// afterwards, scaled by exp(block max - overall max) and divided by the combined
// sum. The whole matrix of probabilities never has to exist.

// For the block x [rows, cols] (row stride ld), in place: max[c] = the largest
// x[r, c], x[r, c] = exp(x[r, c] - max[c]), sum[c] = the sum of those. The
// exponential of kernels/simd.h, the maximum and the sum per column taken row
// by row in single precision: the same values on every SIMD path.
void exp_column_block(float* x, int64_t rows, int64_t cols, int64_t ld, float* max, float* sum);

// The plain loops (double sums, std::exp) the kernel is tested against.
void exp_column_block_reference(float* x, int64_t rows, int64_t cols, int64_t ld, float* max, float* sum);

// How the blocks combine: with M[c] the largest of the blocks' max[b, c] ([blocks,
// cols] each, row-major), scale[b, c] = exp(max[b, c] - M[c]) / sum_b' (exp(max[b',
// c] - M[c]) sum[b', c]): a block's products with its exponentials, times
// scale[b, c], summed over b in order, are the column's softmax products.
void column_block_scales(const float* max, const float* sum, int64_t blocks, int64_t cols, float* scale);

}  // namespace sam2rt
