#include "kernels/rotary.h"

namespace sam2rt {

void rotate_pairs_rows(float* x, int64_t rows, int64_t width, const float* table, int64_t period, int64_t pairs) {
  const int64_t heads = width / (2 * pairs);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* angles = table + (r % period) * pairs * 2;
    float* row = x + r * width;
    for (int64_t h = 0; h < heads; ++h) {
      float* head = row + h * 2 * pairs;
      for (int64_t i = 0; i < pairs; ++i) {
        const float re = head[2 * i], im = head[2 * i + 1];
        const float cos = angles[2 * i], sin = angles[2 * i + 1];
        // (re + i im)(cos + i sin), as complex multiplication computes it.
        head[2 * i] = re * cos - im * sin;
        head[2 * i + 1] = re * sin + im * cos;
      }
    }
  }
}

}  // namespace sam2rt
