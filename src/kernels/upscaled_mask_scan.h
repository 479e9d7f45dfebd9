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
// and reduces it row by row, so the full-size map never exists in memory.
// Output pixels whose four source taps all lie clearly below `low` (by more
// than the rounding of the blend can move a value) are known to be below every
// cut-off and are not computed: the work follows the part of the map that can
// be above `low`, not the output size. One scanner per thread.
class UpscaledMaskScanner {
 public:
  UpscaledMaskScanner(int64_t in_h, int64_t in_w, int64_t out_h, int64_t out_w);

  // plane: [in_h, in_w] logits. Requires low <= threshold <= high; all compared as float (`>`).
  void scan(const float* plane, float threshold, float high, float low, UpscaledMaskSummary& out);

 private:
  // Makes along_x_ row r valid on output columns [begin, end).
  void interpolate_row(const float* plane, int64_t r, int64_t begin, int64_t end);

  int64_t in_h_, in_w_, out_h_, out_w_;
  LinearTaps rows_, cols_;
  std::vector<float> along_x_;                 // [in_h, out_w], valid on each row's range below
  std::vector<int64_t> valid_begin_, valid_end_;
  std::vector<uint8_t> rows_set_[2];           // the binary rows y-1 and y
  std::vector<int32_t> changes_;               // (x, y) pairs where a column changes state, in row order
  std::vector<int32_t> column_count_, rows_by_column_;
  // Per source column c: the first output column with hi >= c and the last with lo <= c.
  std::vector<int64_t> first_out_col_, last_out_col_;
};

// bilinear_resize, then direct counting and a column-major walk of the binary
// mask: the reference the scanner is tested against.
UpscaledMaskSummary upscaled_mask_summary_reference(const float* plane, int64_t in_h, int64_t in_w, int64_t out_h,
                                                    int64_t out_w, float threshold, float high, float low);

}  // namespace sam2rt
