#include "kernels/upscaled_mask_scan.h"

#include <algorithm>
#include <cstring>

#include "core/tensor.h"

namespace sam2rt {

UpscaledMaskScanner::UpscaledMaskScanner(int64_t in_h, int64_t in_w, int64_t out_h, int64_t out_w)
    : rows_(in_h, in_w, out_h, out_w),
      row_(static_cast<size_t>(out_w)),
      set_(static_cast<size_t>(out_w)),
      previous_(static_cast<size_t>(out_w)),
      column_count_(static_cast<size_t>(out_w) + 1) {}

void UpscaledMaskScanner::scan(const float* plane, float threshold, float high, float low,
                               UpscaledMaskSummary& out) {
  const int64_t h = rows_.out_h(), w = rows_.out_w();
  rows_.set_plane(plane);
  out.above_high = out.above_low = 0;
  out.runs.clear();
  changes_.clear();
  std::fill(previous_.begin(), previous_.end(), uint8_t{0});
  // A column changes state where a pixel differs from the one above it (rows
  // 0 and h compare with background); a column's changes alternate start, end.
  auto record_changes = [&](const uint8_t* now, int32_t y) {
    int64_t x = 0;
    for (; x + 8 <= w; x += 8) {
      uint64_t a, b;
      std::memcpy(&a, now + x, 8);
      std::memcpy(&b, previous_.data() + x, 8);
      if (a == b) continue;  // whole runs of equal pixels are skipped 8 at a time
      for (int64_t k = x; k < x + 8; ++k) {
        if (now[k] != previous_[static_cast<size_t>(k)]) {
          changes_.push_back(static_cast<int32_t>(k));
          changes_.push_back(y);
        }
      }
    }
    for (; x < w; ++x) {
      if (now[x] != previous_[static_cast<size_t>(x)]) {
        changes_.push_back(static_cast<int32_t>(x));
        changes_.push_back(y);
      }
    }
  };
  float* values = row_.data();
  uint8_t* set = set_.data();
  for (int64_t y = 0; y < h; ++y) {
    rows_.row(y, values);
    int64_t above_high = 0, above_low = 0;
    for (int64_t x = 0; x < w; ++x) {
      above_high += values[x] > high;
      above_low += values[x] > low;
      set[x] = values[x] > threshold;
    }
    out.above_high += above_high;
    out.above_low += above_low;
    record_changes(set, static_cast<int32_t>(y));
    std::memcpy(previous_.data(), set, static_cast<size_t>(w));
  }
  std::fill(set_.begin(), set_.end(), uint8_t{0});
  record_changes(set_.data(), static_cast<int32_t>(h));

  // Stable bucket sort of the changes by column (they are already in row order).
  std::fill(column_count_.begin(), column_count_.end(), 0);
  const size_t n = changes_.size() / 2;
  for (size_t i = 0; i < n; ++i) ++column_count_[static_cast<size_t>(changes_[2 * i]) + 1];
  for (int64_t x = 0; x < w; ++x) column_count_[static_cast<size_t>(x) + 1] += column_count_[static_cast<size_t>(x)];
  std::vector<int32_t> rows_by_column(n);
  for (size_t i = 0; i < n; ++i) {
    rows_by_column[static_cast<size_t>(column_count_[static_cast<size_t>(changes_[2 * i])]++)] = changes_[2 * i + 1];
  }
  // column_count_[x] now holds the end of column x's changes.
  size_t begin = 0;
  out.runs.reserve(n / 2);
  for (int64_t x = 0; x < w; ++x) {
    const auto end = static_cast<size_t>(column_count_[static_cast<size_t>(x)]);
    for (size_t i = begin; i + 1 < end; i += 2) {
      out.runs.push_back({static_cast<int32_t>(x), rows_by_column[i], rows_by_column[i + 1]});
    }
    begin = end;
  }
}

UpscaledMaskSummary upscaled_mask_summary_reference(const float* plane, int64_t in_h, int64_t in_w, int64_t out_h,
                                                    int64_t out_w, float threshold, float high, float low) {
  Tensor low_res({1, in_h, in_w});
  std::copy_n(plane, in_h * in_w, low_res.data());
  const Tensor up = bilinear_resize(low_res, out_h, out_w);
  UpscaledMaskSummary summary;
  for (int64_t i = 0; i < up.numel(); ++i) {
    summary.above_high += up[i] > high;
    summary.above_low += up[i] > low;
  }
  for (int64_t x = 0; x < out_w; ++x) {
    int64_t start = -1;
    for (int64_t y = 0; y <= out_h; ++y) {
      const bool set = y < out_h && up[y * out_w + x] > threshold;
      if (set && start < 0) start = y;
      if (!set && start >= 0) {
        summary.runs.push_back({static_cast<int32_t>(x), static_cast<int32_t>(start), static_cast<int32_t>(y)});
        start = -1;
      }
    }
  }
  return summary;
}

}  // namespace sam2rt
