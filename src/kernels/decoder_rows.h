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

}  // namespace sam2rt
