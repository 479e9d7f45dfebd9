// The encoder's kernels against plain, index-by-index references.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "random_tensor.h"
#include "core/error.h"
#include "kernels/conv2d.h"
#include "kernels/elementwise.h"
#include "kernels/interpolate.h"
#include "kernels/layout.h"
#include "kernels/window.h"

namespace sam2rt {
namespace {

using testing::random_tensor;

double max_abs_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  double worst = 0.0;
  for (int64_t i = 0; i < std::min(a.numel(), b.numel()); ++i) worst = std::max(worst, std::fabs(double(a[i]) - b[i]));
  return worst;
}

// Direct convolution, NCHW in and out, double accumulation.
Tensor conv2d_reference(const Tensor& x, const Tensor& w, const Tensor& b, int64_t stride, int64_t pad) {
  const int64_t cin = x.dim(1), h = x.dim(2), wd = x.dim(3), cout = w.dim(0), kh = w.dim(2), kw = w.dim(3);
  const int64_t oh = (h + 2 * pad - kh) / stride + 1, ow = (wd + 2 * pad - kw) / stride + 1;
  Tensor y({1, cout, oh, ow});
  for (int64_t o = 0; o < cout; ++o)
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox) {
        double sum = b.empty() ? 0.0 : b[o];
        for (int64_t c = 0; c < cin; ++c)
          for (int64_t ky = 0; ky < kh; ++ky)
            for (int64_t kx = 0; kx < kw; ++kx) {
              const int64_t iy = oy * stride - pad + ky, ix = ox * stride - pad + kx;
              if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
              sum += double(x[(c * h + iy) * wd + ix]) * w[((o * cin + c) * kh + ky) * kw + kx];
            }
        y[(o * oh + oy) * ow + ox] = float(sum);
      }
  return y;
}

TEST(EncoderKernels, PatchEmbedConvMatchesDirectConvolution) {
  // Hiera's patch embedding geometry (7x7, stride 4, padding 3) on an odd-sized image.
  const Tensor x = random_tensor({1, 3, 37, 45}, 1);
  const Tensor w = random_tensor({16, 3, 7, 7}, 2);
  const Tensor b = random_tensor({16}, 3);
  const Tensor expected = conv2d_reference(x, w, b, 4, 3);
  const Tensor actual = conv2d_to_hwc(x, w, b, 4, 3);
  ASSERT_EQ(actual.shape(), (Shape{10, 12, 16}));
  EXPECT_LE(max_abs_diff(hwc_to_nchw(actual), expected), 1e-5);
  EXPECT_LE(max_abs_diff(hwc_to_nchw(conv2d_to_hwc(x, w, Tensor(), 2, 0)), conv2d_reference(x, w, Tensor(), 2, 0)),
            1e-5);
}

TEST(EncoderKernels, Conv1x1IsPerTokenLinear) {
  const Tensor x = random_tensor({1, 24, 5, 7}, 4);
  const Tensor w = random_tensor({8, 24, 1, 1}, 5);
  const Tensor b = random_tensor({8}, 6);
  const Tensor actual = conv1x1_hwc(nchw_to_hwc(x), w, b);
  EXPECT_LE(max_abs_diff(hwc_to_nchw(actual), conv2d_reference(x, w, b, 1, 0)), 1e-5);
  EXPECT_THROW(conv1x1_hwc(nchw_to_hwc(x), random_tensor({8, 24, 3, 3}, 7), b), Error);
}

TEST(EncoderKernels, LayoutRoundTrip) {
  const Tensor x = random_tensor({1, 5, 33, 70}, 8);
  const Tensor hwc = nchw_to_hwc(x);
  ASSERT_EQ(hwc.shape(), (Shape{33, 70, 5}));
  EXPECT_EQ(hwc[(7 * 70 + 9) * 5 + 3], x[(3 * 33 + 7) * 70 + 9]);
  EXPECT_EQ(max_abs_diff(hwc_to_nchw(hwc), x), 0.0);
}

TEST(EncoderKernels, ChannelsLastIntoAGivenTensor) {
  const Tensor x = random_tensor({1, 5, 33, 70}, 9);
  Tensor rows = Tensor::filled({33 * 70, 5}, -1.0f);
  nchw_to_hwc_into(x, rows);
  EXPECT_EQ(max_abs_diff(rows.reshaped({33, 70, 5}), nchw_to_hwc(x)), 0.0);
  Tensor too_small({33 * 70, 4});
  EXPECT_THROW(nchw_to_hwc_into(x, too_small), Error);
}

// Keys' cubic kernel, A = -0.75, evaluated at a tap's distance from the source point.
double keys_cubic(double d) {
  const double a = -0.75, x = std::fabs(d);
  if (x <= 1.0) return (a + 2) * x * x * x - (a + 3) * x * x + 1;
  if (x < 2.0) return a * x * x * x - 5 * a * x * x + 8 * a * x - 4 * a;
  return 0.0;
}

// torch upsample_bicubic2d(align_corners=False) restated per output pixel.
Tensor bicubic_reference(const Tensor& x, int64_t oh, int64_t ow) {
  const int64_t planes = x.dim(0) * x.dim(1), h = x.dim(2), w = x.dim(3);
  Tensor y({x.dim(0), x.dim(1), oh, ow});
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox) {
        const double sy = (oy + 0.5) * double(h) / double(oh) - 0.5;  // not clamped at 0
        const double sx = (ox + 0.5) * double(w) / double(ow) - 0.5;
        const int64_t fy = int64_t(std::floor(sy)), fx = int64_t(std::floor(sx));
        double sum = 0.0;
        for (int64_t ty = fy - 1; ty <= fy + 2; ++ty)
          for (int64_t tx = fx - 1; tx <= fx + 2; ++tx) {
            const int64_t cy = std::clamp<int64_t>(ty, 0, h - 1), cx = std::clamp<int64_t>(tx, 0, w - 1);
            sum += keys_cubic(sy - double(ty)) * keys_cubic(sx - double(tx)) * x[(p * h + cy) * w + cx];
          }
        y[(p * oh + oy) * ow + ox] = float(sum);
      }
  return y;
}

TEST(EncoderKernels, BicubicMatchesPerPixelReference) {
  const Tensor x = random_tensor({1, 3, 7, 4}, 9);
  for (auto [oh, ow] : {std::pair<int64_t, int64_t>{256, 64}, {64, 64}, {7, 4}, {12, 9}, {3, 2}}) {
    EXPECT_LE(max_abs_diff(resize_bicubic(x, oh, ow), bicubic_reference(x, oh, ow)), 1e-6) << oh << "x" << ow;
  }
  // Same size is the identity (torch copies).
  EXPECT_EQ(max_abs_diff(resize_bicubic(x, 7, 4), x), 0.0);
}

TEST(EncoderKernels, BicubicRowsEqualResizeBicubicBitForBit) {
  const Tensor x = random_tensor({1, 5, 7, 6}, 11);
  for (auto [oh, ow] : {std::pair<int64_t, int64_t>{256, 200}, {64, 64}, {7, 6}, {12, 9}, {3, 2}}) {
    const Tensor expected = resize_bicubic(x, oh, ow);
    const BicubicRows rows(x, oh, ow);
    std::vector<float> row(static_cast<size_t>(ow * 5));
    int64_t mismatches = 0;
    for (int64_t y = 0; y < oh; ++y) {
      rows.row(y, row.data());
      for (int64_t xx = 0; xx < ow; ++xx)
        for (int64_t c = 0; c < 5; ++c) mismatches += row[static_cast<size_t>(xx * 5 + c)] != expected[(c * oh + y) * ow + xx];
    }
    EXPECT_EQ(mismatches, 0) << oh << "x" << ow;
  }
  EXPECT_THROW(BicubicRows(random_tensor({2, 5, 7, 6}, 1), 4, 4), Error);
}

TEST(EncoderKernels, BicubicKnownValues) {
  // [0, 1] resized to 4 samples, worked by hand: sources -0.25, 0.25, 0.75, 1.25
  // (the first NOT clamped to 0), taps clamped to the border, so the ends
  // overshoot by K(1.25) = -0.10546875 and the inner samples are
  // K(0.75) + K(1.75) and K(0.25) + K(1.25).
  Tensor x({1, 1, 1, 2});
  x[1] = 1.0f;
  const Tensor y = resize_bicubic(x, 1, 4);
  EXPECT_FLOAT_EQ(y[0], -0.10546875f);
  EXPECT_FLOAT_EQ(y[1], 0.2265625f);
  EXPECT_FLOAT_EQ(y[2], 0.7734375f);
  EXPECT_FLOAT_EQ(y[3], 1.10546875f);
}

TEST(EncoderKernels, NearestUpsampleRepeatsEachToken) {
  const Tensor x = random_tensor({3, 5, 4}, 10);
  const Tensor y = upsample_nearest2x_hwc(x);
  ASSERT_EQ(y.shape(), (Shape{6, 10, 4}));
  for (int64_t oy = 0; oy < 6; ++oy)
    for (int64_t ox = 0; ox < 10; ++ox)
      for (int64_t c = 0; c < 4; ++c) ASSERT_EQ(y[(oy * 10 + ox) * 4 + c], x[((oy / 2) * 5 + ox / 2) * 4 + c]);
}

// window_partition as the official view/permute: pad, then
// [Hp/w, w, Wp/w, w, C] -> [Hp/w, Wp/w, w, w, C].
float partition_reference_at(const Tensor& x, int64_t window, int64_t n, int64_t y, int64_t xx, int64_t c) {
  const int64_t h = x.dim(0), w = x.dim(1), ch = x.dim(2);
  const int64_t nww = (w + window - 1) / window;
  const int64_t gy = (n / nww) * window + y, gx = (n % nww) * window + xx;
  return (gy < h && gx < w) ? x[(gy * w + gx) * ch + c] : 0.0f;
}

TEST(EncoderKernels, WindowPartitionPadsAndUnpartitionCrops) {
  for (auto [h, w, window] : {std::tuple<int64_t, int64_t, int64_t>{32, 32, 6}, {16, 16, 8}, {13, 9, 4}, {8, 8, 14}}) {
    const Tensor x = random_tensor({h, w, 3}, 11);
    const Tensor windows = window_partition(x, window);
    const int64_t count = ((h + window - 1) / window) * ((w + window - 1) / window);
    ASSERT_EQ(windows.shape(), (Shape{count, window, window, 3}));
    for (int64_t n = 0; n < count; ++n)
      for (int64_t y = 0; y < window; ++y)
        for (int64_t xx = 0; xx < window; ++xx)
          for (int64_t c = 0; c < 3; ++c)
            ASSERT_EQ(windows[((n * window + y) * window + xx) * 3 + c], partition_reference_at(x, window, n, y, xx, c))
                << h << "x" << w << " window " << window;
    EXPECT_EQ(max_abs_diff(window_unpartition(windows, window, h, w), x), 0.0);
  }
  EXPECT_THROW(window_unpartition(random_tensor({4, 3, 3, 2}, 12), 3, 9, 9), Error);
}

TEST(EncoderKernels, MaxPoolFloorsAndReadsAChannelSlice) {
  const Tensor x = random_tensor({2, 5, 7, 6}, 13);
  const Tensor y = max_pool2x2(x, 2, 3);
  ASSERT_EQ(y.shape(), (Shape{2, 2, 3, 3}));
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t oy = 0; oy < 2; ++oy)
      for (int64_t ox = 0; ox < 3; ++ox)
        for (int64_t c = 0; c < 3; ++c) {
          float best = -INFINITY;
          for (int64_t dy = 0; dy < 2; ++dy)
            for (int64_t dx = 0; dx < 2; ++dx)
              best = std::max(best, x[((b * 5 + 2 * oy + dy) * 7 + 2 * ox + dx) * 6 + 2 + c]);
          ASSERT_EQ(y[((b * 2 + oy) * 3 + ox) * 3 + c], best);
        }
  EXPECT_EQ(max_pool2x2(x).shape(), (Shape{2, 2, 3, 6}));
  EXPECT_THROW(max_pool2x2(x, 4, 3), Error);
}

TEST(EncoderKernels, ElementwiseAdds) {
  Tensor x = random_tensor({4, 3}, 14);
  const Tensor original = x.clone();
  const Tensor bias = random_tensor({3}, 15);
  add_channel_vector_inplace(x, bias);
  for (int64_t i = 0; i < 12; ++i) EXPECT_EQ(x[i], original[i] + bias[i % 3]);
  add_inplace(x, original);
  for (int64_t i = 0; i < 12; ++i) EXPECT_EQ(x[i], (original[i] + bias[i % 3]) + original[i]);
  EXPECT_THROW(add_inplace(x, bias), Error);
  EXPECT_THROW(add_channel_vector_inplace(x, original), Error);
}

}  // namespace
}  // namespace sam2rt
