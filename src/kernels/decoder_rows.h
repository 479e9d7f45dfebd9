#pragma once

#include <cstdint>

namespace sam2rt {

// Row-wise steps of the mask decoder on channels-last maps ([rows, C], one image
// token or pixel per row).

// x[r] = LayerNorm(x[r] + y[r]) in place (y may be null: plain LayerNorm): the
// float sum x + y, then kernels/norm.h's vectorised single-precision LayerNorm.
void add_layer_norm_rows(float* x, const float* y, int64_t rows, int64_t c, const float* weight, const float* bias,
                         float eps);

// out[i] = a[i] + b[i]; out may be a or b.
void add_rows(const float* a, const float* b, int64_t count, float* out);

// x[i] += y[i].
void add_rows_inplace(float* x, const float* y, int64_t count);

// out[r, :] = scale[r] * x[r, :] + y[r, :] over `rows` rows of c floats (row
// strides ldx, ldy, ldo; ldy 0 adds the same row y to every row). out may be x.
void scale_rows_add(const float* scale, const float* x, int64_t ldx, const float* y, int64_t ldy, int64_t rows,
                    int64_t c, float* out, int64_t ldo);

// x[r, :] *= scale[r] in place over `rows` rows of c floats (row stride ldx).
void scale_rows(const float* scale, float* x, int64_t ldx, int64_t rows, int64_t c);

// out[r, :] = scale[r] * x[r, :] without the first column of each group: row r
// of x holds `groups` consecutive groups of `group` floats (row stride ldx), row
// r of out their other group - 1 columns each, in order (row stride ldo). The
// product rounds as scale_rows'.
void scale_rows_without_group_firsts(const float* scale, const float* x, int64_t ldx, int64_t rows, int64_t groups,
                                     int64_t group, float* out, int64_t ldo);

// out[r] = sum_j a[r, j] * b[r, j], accumulated in double (row strides lda, ldb).
void dot_rows(const float* a, int64_t lda, const float* b, int64_t ldb, int64_t rows, int64_t c, double* out);
// out[r] = sum_j a[r, j] * v[j] in double. Both add element j into lane j % 16 and
// then the lanes by a fixed tree: the same sums on every SIMD path.
void dot_rows_with(const float* a, int64_t lda, const double* v, int64_t rows, int64_t c, double* out);

// x[r, :] -= mean(x[r, :]) in place, the mean accumulated in double.
void center_rows(float* x, int64_t rows, int64_t c);

// The scatter of a 2x2, stride-2 transposed convolution on channels-last maps:
// taps holds, per input pixel of a band of `rows` rows of a w-wide map, its four
// output pixels [rows * w, 4 * cout] (column (dy * 2 + dx) * cout + o); out
// receives the 2 * rows output rows ([2 * rows * 2w, cout]): the tap plus bias[o]
// (when bias is given), plus the same pixel of `add` (when given, laid out as out):
// (tap + bias) + add, as the separate steps would round.
void scatter_2x2_taps(const float* taps, int64_t rows, int64_t w, int64_t cout, const float* bias, const float* add,
                      float* out);

}  // namespace sam2rt
