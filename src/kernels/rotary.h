#pragma once

#include <cstdint>

namespace sam2rt {

// Rotary position encoding (RoPE) in place on `rows` rows of x, each `width`
// floats: every head of head_dim = 2 * pairs channels holds `pairs` complex
// numbers (channels 2i, 2i+1 as real and imaginary parts), each multiplied by
// the unit complex number table[(r % period) * pairs + i] = (cos, sin) of its
// row's angle. Rows past `period` reuse the table from its start: the keys of
// several memory frames take the positions of one frame's grid.
// table holds period * pairs (cos, sin) pairs; width is a multiple of 2 * pairs.
void rotate_pairs_rows(float* x, int64_t rows, int64_t width, const float* table, int64_t period, int64_t pairs);

}  // namespace sam2rt
