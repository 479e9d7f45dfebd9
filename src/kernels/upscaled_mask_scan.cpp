#include "kernels/upscaled_mask_scan.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/tensor.h"
#include "kernels/simd.h"
#include "kernels/simd_dispatch.h"

// Vector helpers are inlined into per-ISA functions (simd.h): no ABI crossing.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace sam2rt {

namespace {

// One output row on [begin, end): the blend of two x-interpolated source rows
// (the same float operations as bilinear_resize), its two counts and its binary row.
template <class T>
[[gnu::always_inline]] inline void blend_row(const float* upper, const float* lower, float wt, float wb,
                                             int64_t begin, int64_t end, float threshold, float high, float low,
                                             uint8_t* set, int64_t& above_high, int64_t& above_low) {
  using V = typename T::F;
  using VI = typename T::I;
  using VB [[gnu::vector_size(T::lanes)]] = uint8_t;
  constexpr int n = T::lanes;
  VI high_count{}, low_count{};
  const V vt = simd::splat<V>(wt), vb = simd::splat<V>(wb);
  const V vthreshold = simd::splat<V>(threshold), vhigh = simd::splat<V>(high), vlow = simd::splat<V>(low);
  int64_t x = begin;
  for (; x + n <= end; x += n) {
    const V v = simd::load<V>(upper + x) * vt + simd::load<V>(lower + x) * vb;
    high_count -= (v > vhigh);  // comparisons give -1 where true
    low_count -= (v > vlow);
    const VB bits = __builtin_convertvector((v > vthreshold) & 1, VB);
    std::memcpy(set + x, &bits, sizeof bits);
  }
  int32_t lanes[n];
  std::memcpy(lanes, &high_count, sizeof lanes);
  for (int i = 0; i < n; ++i) above_high += lanes[i];
  std::memcpy(lanes, &low_count, sizeof lanes);
  for (int i = 0; i < n; ++i) above_low += lanes[i];
  for (; x < end; ++x) {
    const float v = upper[x] * wt + lower[x] * wb;
    above_high += v > high;
    above_low += v > low;
    set[x] = v > threshold;
  }
}

__attribute__((target("avx512f,avx512bw,avx512vl"))) void blend_row_avx512(
    const float* upper, const float* lower, float wt, float wb, int64_t begin, int64_t end, float threshold,
    float high, float low, uint8_t* set, int64_t& above_high, int64_t& above_low) {
  blend_row<simd::Types<16>>(upper, lower, wt, wb, begin, end, threshold, high, low, set, above_high, above_low);
}

__attribute__((target("avx2"))) void blend_row_avx2(const float* upper, const float* lower, float wt, float wb,
                                                    int64_t begin, int64_t end, float threshold, float high,
                                                    float low, uint8_t* set, int64_t& above_high,
                                                    int64_t& above_low) {
  blend_row<simd::Types<8>>(upper, lower, wt, wb, begin, end, threshold, high, low, set, above_high, above_low);
}

void blend_row_baseline(const float* upper, const float* lower, float wt, float wb, int64_t begin, int64_t end,
                        float threshold, float high, float low, uint8_t* set, int64_t& above_high,
                        int64_t& above_low) {
  blend_row<simd::Types<4>>(upper, lower, wt, wb, begin, end, threshold, high, low, set, above_high, above_low);
}

using BlendRow = void (*)(const float*, const float*, float, float, int64_t, int64_t, float, float, float, uint8_t*,
                          int64_t&, int64_t&);

const KernelTable<BlendRow> kBlendRow{
    .baseline = blend_row_baseline, .avx2 = blend_row_avx2, .avx512 = blend_row_avx512};

// Appends (x, y) for every column where `now` differs from `before` on [begin, end).
void record_changes(const uint8_t* now, const uint8_t* before, int64_t begin, int64_t end, int32_t y,
                    std::vector<int32_t>& changes) {
  int64_t x = begin;
  for (; x + 8 <= end; x += 8) {
    uint64_t a, b;
    std::memcpy(&a, now + x, 8);
    std::memcpy(&b, before + x, 8);
    if (a == b) continue;  // runs of equal pixels are skipped 8 at a time
    for (int64_t k = x; k < x + 8; ++k) {
      if (now[k] != before[k]) {
        changes.push_back(static_cast<int32_t>(k));
        changes.push_back(y);
      }
    }
  }
  for (; x < end; ++x) {
    if (now[x] != before[x]) {
      changes.push_back(static_cast<int32_t>(x));
      changes.push_back(y);
    }
  }
}

}  // namespace

UpscaledMaskScanner::UpscaledMaskScanner(int64_t in_h, int64_t in_w, int64_t out_h, int64_t out_w)
    : in_h_(in_h),
      in_w_(in_w),
      out_h_(out_h),
      out_w_(out_w),
      rows_(linear_taps(in_h, out_h)),
      cols_(linear_taps(in_w, out_w)),
      along_x_(static_cast<size_t>(in_h * out_w)),
      valid_begin_(static_cast<size_t>(in_h)),
      valid_end_(static_cast<size_t>(in_h)),
      column_count_(static_cast<size_t>(out_w) + 1),
      first_out_col_(static_cast<size_t>(in_w)),
      last_out_col_(static_cast<size_t>(in_w)) {
  if (in_h <= 0 || in_w <= 0 || out_h <= 0 || out_w <= 0 || out_w > INT32_MAX || out_h > INT32_MAX) {
    throw Error("UpscaledMaskScanner: cannot upsample " + std::to_string(in_h) + "x" + std::to_string(in_w) +
                " to " + std::to_string(out_h) + "x" + std::to_string(out_w));
  }
  for (auto& row : rows_set_) row.assign(static_cast<size_t>(out_w), 0);
  // Taps are monotone in the output index: the output columns with a tap in
  // [c0, c1] lie in [first with hi >= c0, last with lo <= c1].
  for (int64_t c = 0; c < in_w; ++c) {
    int64_t first = out_w, last = -1;
    for (int64_t x = out_w - 1; x >= 0; --x) {
      if (cols_.hi[x] >= c) first = x;
    }
    for (int64_t x = 0; x < out_w; ++x) {
      if (cols_.lo[x] <= c) last = x;
    }
    first_out_col_[static_cast<size_t>(c)] = first;
    last_out_col_[static_cast<size_t>(c)] = last;
  }
}

void UpscaledMaskScanner::interpolate_row(const float* plane, int64_t r, int64_t begin, int64_t end) {
  int64_t& valid_begin = valid_begin_[static_cast<size_t>(r)];
  int64_t& valid_end = valid_end_[static_cast<size_t>(r)];
  const float* src = plane + r * in_w_;
  float* out = along_x_.data() + r * out_w_;
  auto fill = [&](int64_t a, int64_t b) {
    for (int64_t j = a; j < b; ++j) out[j] = src[cols_.lo[j]] * cols_.w_lo[j] + src[cols_.hi[j]] * cols_.w_hi[j];
  };
  if (valid_begin >= valid_end) {
    fill(begin, end);
    valid_begin = begin;
    valid_end = end;
    return;
  }
  if (begin < valid_begin) fill(begin, valid_begin);
  if (end > valid_end) fill(valid_end, end);
  valid_begin = std::min(valid_begin, begin);
  valid_end = std::max(valid_end, end);
}

void UpscaledMaskScanner::scan(const float* plane, float threshold, float high, float low, UpscaledMaskSummary& out) {
  const BlendRow blend = kBlendRow.best();
  out.above_high = out.above_low = 0;
  out.runs.clear();
  changes_.clear();
  std::fill(valid_begin_.begin(), valid_begin_.end(), 0);
  std::fill(valid_end_.begin(), valid_end_.end(), 0);

  // A blended value exceeds the largest of its four taps by at most a few ulp of
  // the largest magnitude (weights sum to 1 within 2^-24, products and sums
  // round once each), far less than this margin.
  float max_abs = 0.0f;
  for (int64_t i = 0; i < in_h_ * in_w_; ++i) max_abs = std::max(max_abs, std::fabs(plane[i]));
  const float maybe_above = low - 1e-5f * (1.0f + max_abs);

  // Rows y-1 (previous) and y (current) of the binary mask; zero outside their
  // active ranges. A column changes state where a pixel differs from the one
  // above it (rows 0 and h compare with background).
  uint8_t* previous = rows_set_[0].data();
  uint8_t* current = rows_set_[1].data();
  int64_t previous_begin = 0, previous_end = 0, stale_begin = 0, stale_end = 0;
  std::memset(previous, 0, static_cast<size_t>(out_w_));
  std::memset(current, 0, static_cast<size_t>(out_w_));
  for (int64_t y = 0; y < out_h_; ++y) {
    const int64_t r0 = rows_.lo[y], r1 = rows_.hi[y];
    const float* p0 = plane + r0 * in_w_;
    const float* p1 = plane + r1 * in_w_;
    int64_t c_first = -1, c_last = -1;
    for (int64_t c = 0; c < in_w_; ++c) {
      if (p0[c] > maybe_above || p1[c] > maybe_above) {
        if (c_first < 0) c_first = c;
        c_last = c;
      }
    }
    std::memset(current + stale_begin, 0, static_cast<size_t>(stale_end - stale_begin));
    int64_t begin = 0, end = 0;
    if (c_first >= 0) {
      begin = first_out_col_[static_cast<size_t>(c_first)];
      end = std::max(begin, last_out_col_[static_cast<size_t>(c_last)] + 1);
      interpolate_row(plane, r0, begin, end);
      interpolate_row(plane, r1, begin, end);
      blend(along_x_.data() + r0 * out_w_, along_x_.data() + r1 * out_w_, rows_.w_lo[y], rows_.w_hi[y], begin, end,
            threshold, high, low, current, out.above_high, out.above_low);
    }
    if (begin < end || previous_begin < previous_end) {
      const int64_t a = begin < end ? (previous_begin < previous_end ? std::min(begin, previous_begin) : begin)
                                    : previous_begin;
      const int64_t b = begin < end ? std::max(end, previous_end) : previous_end;
      record_changes(current, previous, a, b, static_cast<int32_t>(y), changes_);
    }
    std::swap(previous, current);
    stale_begin = previous_begin;
    stale_end = previous_end;
    previous_begin = begin;
    previous_end = end;
  }
  std::memset(current + stale_begin, 0, static_cast<size_t>(stale_end - stale_begin));
  record_changes(current, previous, previous_begin, previous_end, static_cast<int32_t>(out_h_), changes_);

  // Stable bucket sort of the changes by column (they are already in row order).
  std::fill(column_count_.begin(), column_count_.end(), 0);
  const size_t n = changes_.size() / 2;
  for (size_t i = 0; i < n; ++i) ++column_count_[static_cast<size_t>(changes_[2 * i]) + 1];
  for (int64_t x = 0; x < out_w_; ++x) {
    column_count_[static_cast<size_t>(x) + 1] += column_count_[static_cast<size_t>(x)];
  }
  rows_by_column_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    rows_by_column_[static_cast<size_t>(column_count_[static_cast<size_t>(changes_[2 * i])]++)] = changes_[2 * i + 1];
  }
  // column_count_[x] now holds the end of column x's changes; they alternate start, end.
  size_t begin = 0;
  for (int64_t x = 0; x < out_w_; ++x) {
    const auto end = static_cast<size_t>(column_count_[static_cast<size_t>(x)]);
    for (size_t i = begin; i + 1 < end; i += 2) {
      out.runs.push_back({static_cast<int32_t>(x), rows_by_column_[i], rows_by_column_[i + 1]});
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
