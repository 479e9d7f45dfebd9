#include "kernels/antialias_resize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace sam2rt {
namespace {

// The definition, evaluated directly in double as a 2-D sum: output pixel
// (x, y) of a (src -> dst) resize has its center at scale * (i + 0.5) in input
// coordinates (scale = src / dst per axis); input pixel k weighs
// triangle((k + 0.5 - center) / max(1, scale)), normalised over the input.
std::vector<double> axis_weights(int src, int dst, int i) {
  const double scale = static_cast<double>(src) / dst;
  const double stretch = std::max(1.0, scale);
  const double center = scale * (i + 0.5);
  std::vector<double> w(static_cast<size_t>(src));
  double total = 0;
  for (int k = 0; k < src; ++k) {
    w[static_cast<size_t>(k)] = std::max(0.0, 1.0 - std::fabs((k + 0.5 - center) / stretch));
    total += w[static_cast<size_t>(k)];
  }
  for (double& v : w) v /= total;
  return w;
}

std::vector<float> reference_resize(const std::vector<float>& src, int planes, int src_w, int src_h, int dst_w,
                                    int dst_h) {
  std::vector<float> dst(static_cast<size_t>(planes) * dst_w * dst_h);
  for (int p = 0; p < planes; ++p) {
    for (int y = 0; y < dst_h; ++y) {
      const std::vector<double> wy = axis_weights(src_h, dst_h, y);
      for (int x = 0; x < dst_w; ++x) {
        const std::vector<double> wx = axis_weights(src_w, dst_w, x);
        double sum = 0;
        for (int j = 0; j < src_h; ++j) {
          for (int i = 0; i < src_w; ++i) {
            sum += wy[static_cast<size_t>(j)] * wx[static_cast<size_t>(i)] *
                   src[(static_cast<size_t>(p) * src_h + j) * src_w + i];
          }
        }
        dst[(static_cast<size_t>(p) * dst_h + y) * dst_w + x] = static_cast<float>(sum);
      }
    }
  }
  return dst;
}

struct Sizes {
  int src_w, src_h, dst_w, dst_h;
};

TEST(AntialiasResize, MatchesTheDirectDefinition) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> value(0.0f, 1.0f);
  for (const Sizes s : {Sizes{37, 23, 16, 16}, Sizes{16, 16, 37, 23}, Sizes{29, 11, 16, 16}, Sizes{30, 20, 30, 9},
                        Sizes{13, 20, 31, 20}, Sizes{150, 110, 32, 32}, Sizes{5, 7, 64, 64}}) {
    SCOPED_TRACE(std::to_string(s.src_w) + "x" + std::to_string(s.src_h) + " -> " + std::to_string(s.dst_w) + "x" +
                 std::to_string(s.dst_h));
    const int planes = 3;
    std::vector<float> src(static_cast<size_t>(planes) * s.src_w * s.src_h);
    for (float& v : src) v = value(rng);
    std::vector<float> ours(static_cast<size_t>(planes) * s.dst_w * s.dst_h, -1.0f);
    resize_bilinear_antialias(src.data(), planes, s.src_w, s.src_h, ours.data(), s.dst_w, s.dst_h);
    const std::vector<float> expected = reference_resize(src, planes, s.src_w, s.src_h, s.dst_w, s.dst_h);
    double worst = 0;
    for (size_t i = 0; i < ours.size(); ++i) worst = std::max(worst, std::fabs(double(ours[i]) - expected[i]));
    EXPECT_LE(worst, 2e-6);
  }
}

TEST(AntialiasResize, SameSizeCopiesAndConstantsStayConstant) {
  std::vector<float> src(2 * 9 * 5);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i) * 0.25f;
  std::vector<float> dst(src.size());
  resize_bilinear_antialias(src.data(), 2, 9, 5, dst.data(), 9, 5);
  EXPECT_EQ(dst, src);

  std::vector<float> flat(3 * 40 * 30, 0.625f);
  std::vector<float> out(3 * 17 * 53);
  resize_bilinear_antialias(flat.data(), 3, 40, 30, out.data(), 17, 53);
  for (float v : out) ASSERT_NEAR(v, 0.625f, 1e-6f);
}

// Downscaling by an integer factor averages: a 2x reduction of a row of
// alternating 0/1 pixels is a triangle over 4 inputs, not a point sample.
TEST(AntialiasResize, DownscalingFiltersInsteadOfSampling) {
  std::vector<float> src(16);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i % 2);
  std::vector<float> dst(8);
  resize_bilinear_antialias(src.data(), 1, 16, 1, dst.data(), 8, 1);
  // Interior output: inputs 2i-1..2i+2 weigh 1/8, 3/8, 3/8, 1/8.
  for (int i = 1; i < 7; ++i) EXPECT_FLOAT_EQ(dst[static_cast<size_t>(i)], 0.5f) << i;
}

}  // namespace
}  // namespace sam2rt
