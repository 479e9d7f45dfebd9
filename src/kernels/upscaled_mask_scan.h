#pragma once

#include <cstdint>
#include <vector>

#include "kernels/bilinear_resize.h"

namespace sam2rt {

// A run of set pixels in one column of a binary mask: rows [y0, y1) of column x.
struct ColumnRun {
  int32_t x = 0, y0 = 0, y1 = 0;
};

// What the automatic mask generator needs of one upsampled logit map.
struct UpscaledMaskSummary {
  int64_t above_high = 0;       // pixels with logit > high (stability numerator)
  int64_t above_low = 0;        // pixels with logit > low (stability denominator)
  std::vector<ColumnRun> runs;  // the binary mask logit > threshold, by column, then row
};

// Upsamples a low-res logit map as bilinear_resize does (the same float values)
// and reduces it row by row, so the full-size map never exists in memory:
// O(out_w) scratch plus the runs. One scanner per thread.
class UpscaledMaskScanner {
 public:
  UpscaledMaskScanner(int64_t in_h, int64_t in_w, int64_t out_h, int64_t out_w);

  // plane: [in_h, in_w] logits. threshold/high/low are compared as float (`>`).
  void scan(const float* plane, float threshold, float high, float low, UpscaledMaskSummary& out);

 private:
  BilinearRows rows_;
  std::vector<float> row_;
  std::vector<uint8_t> set_, previous_;
  std::vector<int32_t> changes_;  // (x, y) pairs where a column changes state, in row order
  std::vector<int32_t> column_count_;
};

// bilinear_resize, then direct counting and a column-major walk of the binary
// mask: the reference the scanner is tested against.
UpscaledMaskSummary upscaled_mask_summary_reference(const float* plane, int64_t in_h, int64_t in_w, int64_t out_h,
                                                    int64_t out_w, float threshold, float high, float low);

}  // namespace sam2rt
