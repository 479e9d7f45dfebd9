#include "kernels/layout.h"

#include <algorithm>

#include "core/error.h"

namespace sam2rt {

namespace {

// dst[j, i] = src[i, j] for a rows x cols matrix, in cache-sized tiles. The
// inner loop writes consecutive addresses: strided writes across far-apart rows
// would touch a new page per element.
// Tiles go to whichever thread is free (fair on a shared machine).
void transpose(const float* src, float* dst, int64_t rows, int64_t cols) {
  constexpr int64_t kTile = 64;
#pragma omp parallel for collapse(2) schedule(dynamic, 8) if (rows * cols > (1 << 16))
  for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
    for (int64_t r0 = 0; r0 < rows; r0 += kTile) {
      const int64_t r1 = std::min(rows, r0 + kTile), c1 = std::min(cols, c0 + kTile);
      for (int64_t c = c0; c < c1; ++c)
        for (int64_t r = r0; r < r1; ++r) dst[c * rows + r] = src[r * cols + c];
    }
  }
}

}  // namespace

Tensor hwc_to_nchw(const Tensor& hwc) {
  if (hwc.rank() != 3) throw Error("hwc_to_nchw: expected [H, W, C], got " + shape_to_string(hwc.shape()));
  const int64_t h = hwc.dim(0), w = hwc.dim(1), c = hwc.dim(2);
  Tensor out({1, c, h, w});
  transpose(hwc.data(), out.data(), h * w, c);
  return out;
}

void hwc_to_nchw_into(const Tensor& hwc, Tensor& nchw) {
  if (hwc.rank() != 3) throw Error("hwc_to_nchw: expected [H, W, C], got " + shape_to_string(hwc.shape()));
  const Shape expected = {1, hwc.dim(2), hwc.dim(0), hwc.dim(1)};
  if (nchw.shape() != expected) {
    throw Error("hwc_to_nchw: output is " + shape_to_string(nchw.shape()) + ", expected " + shape_to_string(expected));
  }
  transpose(hwc.data(), nchw.data(), hwc.dim(0) * hwc.dim(1), hwc.dim(2));
}

Tensor nchw_to_hwc(const Tensor& nchw) {
  if (nchw.rank() != 4 || nchw.dim(0) != 1) {
    throw Error("nchw_to_hwc: expected [1, C, H, W], got " + shape_to_string(nchw.shape()));
  }
  Tensor out = Tensor::uninitialized({nchw.dim(2), nchw.dim(3), nchw.dim(1)});
  nchw_to_hwc_into(nchw, out);
  return out;
}

void nchw_to_hwc_into(const Tensor& nchw, Tensor& hwc) {
  if (nchw.rank() != 4 || nchw.dim(0) != 1) {
    throw Error("nchw_to_hwc: expected [1, C, H, W], got " + shape_to_string(nchw.shape()));
  }
  if (hwc.numel() != nchw.numel()) {
    throw Error("nchw_to_hwc: output " + shape_to_string(hwc.shape()) + " does not hold " +
                shape_to_string(nchw.shape()));
  }
  transpose(nchw.data(), hwc.data(), nchw.dim(1), nchw.dim(2) * nchw.dim(3));
}

void nchw_to_2x2_taps_into(const Tensor& nchw, Tensor& taps) {
  if (nchw.rank() != 4 || nchw.dim(0) != 1 || nchw.dim(2) % 2 != 0 || nchw.dim(3) % 2 != 0) {
    throw Error("nchw_to_2x2_taps: expected [1, C, 2H, 2W], got " + shape_to_string(nchw.shape()));
  }
  if (taps.numel() != nchw.numel()) {
    throw Error("nchw_to_2x2_taps: output " + shape_to_string(taps.shape()) + " does not hold " +
                shape_to_string(nchw.shape()));
  }
  const int64_t c = nchw.dim(1), h = nchw.dim(2) / 2, w = nchw.dim(3) / 2;
  for (int64_t ch = 0; ch < c; ++ch)
    for (int64_t y = 0; y < 2 * h; ++y) {
      const float* const src = nchw.data() + (ch * 2 * h + y) * 2 * w;
      const int64_t i = y / 2, dy = y % 2;
      for (int64_t dx = 0; dx < 2; ++dx) {
        float* const dst = taps.data() + ((i * 4 * c) + (dy * 2 + dx) * c + ch) * w;
        for (int64_t j = 0; j < w; ++j) dst[j] = src[2 * j + dx];
      }
    }
}

}  // namespace sam2rt
