#include "kernels/pillow_resize.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"

namespace sam2rt {

namespace {

// Pillow's PRECISION_BITS for 8-bit images (32 - 8 - 2).
constexpr int kPrecisionBits = 22;

// For every output index along one axis: the window of input indices it reads
// and their fixed-point weights (row `i` of `weights` holds `count[i]` valid
// entries out of `ksize`).
struct AxisTaps {
  int ksize = 0;
  std::vector<int> first;
  std::vector<int> count;
  std::vector<int32_t> weights;
};

double triangle_filter(double x) {
  if (x < 0.0) x = -x;
  return x < 1.0 ? 1.0 - x : 0.0;
}

// Keys' cubic convolution kernel with a = -0.5 (Pillow's BICUBIC), each piece
// in Horner form as Pillow evaluates it, so the doubles round alike.
double cubic_filter(double x) {
  constexpr double a = -0.5;
  if (x < 0.0) x = -x;
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
  if (x < 2.0) return (((x - 5.0) * x + 8.0) * x - 4.0) * a;
  return 0.0;
}

struct FilterShape {
  double (*kernel)(double);
  double support;  // half-width at scale 1
};

FilterShape filter_shape(PillowFilter filter) {
  switch (filter) {
    case PillowFilter::bilinear:
      return {triangle_filter, 1.0};
    case PillowFilter::bicubic:
      return {cubic_filter, 2.0};
  }
  throw Error("pillow_resize: unknown filter " + std::to_string(static_cast<int>(filter)));
}

// Pillow's precompute_coeffs + normalize_coeffs_8bpc over the box (0, in_size):
// the same double operations in the same order, so the weights and their
// rounding to fixed point agree exactly.
AxisTaps filter_taps(int in_size, int out_size, PillowFilter filter) {
  const FilterShape shape = filter_shape(filter);
  // Pillow's box coordinates are float; in1 - in0 is widened to double.
  const double scale = static_cast<double>(static_cast<float>(in_size)) / out_size;
  const double filterscale = std::max(scale, 1.0);
  const double support = shape.support * filterscale;
  const double inverse_filterscale = 1.0 / filterscale;

  AxisTaps taps;
  taps.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  taps.first.resize(out_size);
  taps.count.resize(out_size);
  taps.weights.assign(static_cast<size_t>(out_size) * taps.ksize, 0);
  std::vector<double> k(taps.ksize);
  for (int xx = 0; xx < out_size; ++xx) {
    const double center = (xx + 0.5) * scale;
    int xmin = static_cast<int>(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    int xmax = static_cast<int>(center + support + 0.5);
    if (xmax > in_size) xmax = in_size;
    xmax -= xmin;
    double total = 0.0;
    for (int x = 0; x < xmax; ++x) {
      k[x] = shape.kernel((x + xmin - center + 0.5) * inverse_filterscale);
      total += k[x];
    }
    int32_t* fixed = &taps.weights[static_cast<size_t>(xx) * taps.ksize];
    for (int x = 0; x < xmax; ++x) {
      if (total != 0.0) k[x] /= total;
      const double scaled = k[x] * (1 << kPrecisionBits);
      fixed[x] = static_cast<int32_t>(k[x] < 0 ? -0.5 + scaled : 0.5 + scaled);
    }
    taps.first[xx] = xmin;
    taps.count[xx] = xmax;
  }
  return taps;
}

// Pillow accumulates in int starting from half a unit; int64 gives the same
// sums wherever Pillow's do not overflow (any downscale below ~4M:1).
constexpr int64_t kRoundingBias = int64_t{1} << (kPrecisionBits - 1);

uint8_t clip8(int64_t sum) {
  return static_cast<uint8_t>(std::clamp<int64_t>(sum >> kPrecisionBits, 0, 255));
}

// Thread start-up costs more than resizing a small image.
bool worth_threads(int rows, int width, int channels) {
  return static_cast<int64_t>(rows) * width * channels >= (int64_t{1} << 16);
}

void resample_horizontal(const uint8_t* src, int src_w, int rows, int channels,
                         const AxisTaps& taps, uint8_t* dst, int dst_w) {
#pragma omp parallel for schedule(static) if (worth_threads(rows, dst_w, channels))
  for (int y = 0; y < rows; ++y) {
    const uint8_t* in = src + static_cast<size_t>(y) * src_w * channels;
    uint8_t* out = dst + static_cast<size_t>(y) * dst_w * channels;
    for (int xx = 0; xx < dst_w; ++xx) {
      const int32_t* k = &taps.weights[static_cast<size_t>(xx) * taps.ksize];
      const uint8_t* window = in + static_cast<size_t>(taps.first[xx]) * channels;
      for (int c = 0; c < channels; ++c) {
        int64_t sum = kRoundingBias;
        for (int x = 0; x < taps.count[xx]; ++x) sum += int64_t{window[x * channels + c]} * k[x];
        out[xx * channels + c] = clip8(sum);
      }
    }
  }
}

// `src` rows are addressed relative to the taps' `first` indices.
void resample_vertical(const uint8_t* src, int width, int channels, const AxisTaps& taps,
                       uint8_t* dst, int dst_h) {
  const size_t row_len = static_cast<size_t>(width) * channels;
#pragma omp parallel if (worth_threads(dst_h, width, channels))
  {
    std::vector<int64_t> sums(row_len);
#pragma omp for schedule(static)
    for (int yy = 0; yy < dst_h; ++yy) {
      const int32_t* k = &taps.weights[static_cast<size_t>(yy) * taps.ksize];
      std::fill(sums.begin(), sums.end(), kRoundingBias);
      for (int y = 0; y < taps.count[yy]; ++y) {
        const uint8_t* in = src + static_cast<size_t>(taps.first[yy] + y) * row_len;
        for (size_t i = 0; i < row_len; ++i) sums[i] += int64_t{in[i]} * k[y];
      }
      uint8_t* out = dst + static_cast<size_t>(yy) * row_len;
      for (size_t i = 0; i < row_len; ++i) out[i] = clip8(sums[i]);
    }
  }
}

}  // namespace

void pillow_resize(const uint8_t* src, int src_w, int src_h, int channels, uint8_t* dst,
                   int dst_w, int dst_h, PillowFilter filter) {
  if (channels < 1 || channels > 4 || src_w <= 0 || src_h <= 0 || dst_w <= 0 || dst_h <= 0) {
    throw Error("pillow_resize: invalid geometry " + std::to_string(src_w) + "x" +
                std::to_string(src_h) + "x" + std::to_string(channels) + " -> " +
                std::to_string(dst_w) + "x" + std::to_string(dst_h));
  }
  // Like ImagingResampleInner: a pass whose size does not change is skipped.
  const bool need_horizontal = dst_w != src_w;
  const bool need_vertical = dst_h != src_h;
  if (!need_horizontal && !need_vertical) {
    std::memcpy(dst, src, static_cast<size_t>(src_w) * src_h * channels);
    return;
  }
  if (!need_vertical) {
    resample_horizontal(src, src_w, src_h, channels, filter_taps(src_w, dst_w, filter), dst, dst_w);
    return;
  }
  AxisTaps vertical = filter_taps(src_h, dst_h, filter);
  if (!need_horizontal) {
    resample_vertical(src, src_w, channels, vertical, dst, dst_h);
    return;
  }
  // The horizontal pass covers only the source rows the vertical pass reads.
  const int first_row = vertical.first.front();
  const int end_row = vertical.first.back() + vertical.count.back();
  for (int& first : vertical.first) first -= first_row;
  std::vector<uint8_t> intermediate(static_cast<size_t>(end_row - first_row) * dst_w * channels);
  resample_horizontal(src + static_cast<size_t>(first_row) * src_w * channels, src_w,
                      end_row - first_row, channels, filter_taps(src_w, dst_w, filter),
                      intermediate.data(), dst_w);
  resample_vertical(intermediate.data(), dst_w, channels, vertical, dst, dst_h);
}

}  // namespace sam2rt
