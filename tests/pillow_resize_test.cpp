#include "kernels/pillow_resize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/image.h"
#include "test_paths.h"

namespace sam2rt {
namespace {

using Bytes = std::vector<uint8_t>;

Bytes resize(const Bytes& src, int src_w, int src_h, int channels, int dst_w, int dst_h) {
  Bytes dst(static_cast<size_t>(dst_w) * dst_h * channels);
  pillow_resize(src.data(), src_w, src_h, channels, dst.data(), dst_w, dst_h,
                PillowFilter::bilinear);
  return dst;
}

// ---------------------------------------------------------------------------
// Plain reference: Pillow's BILINEAR resample written out directly, one output
// sample at a time, always running both passes over the whole image.

struct Tap {
  int index;
  int32_t weight;
};

std::vector<Tap> reference_taps(int in_size, int out_size, int out_index) {
  const double scale = static_cast<double>(in_size) / out_size;
  const double support = std::max(scale, 1.0);  // triangle support 1, widened when shrinking
  const double center = (out_index + 0.5) * scale;
  const int lo = std::max(0, static_cast<int>(center - support + 0.5));
  const int hi = std::min(in_size, static_cast<int>(center + support + 0.5));
  std::vector<double> w;
  double total = 0;
  for (int i = lo; i < hi; ++i) {
    const double d = std::fabs((i - center + 0.5) / support);
    w.push_back(d < 1 ? 1 - d : 0);
    total += w.back();
  }
  std::vector<Tap> taps;
  for (int i = lo; i < hi; ++i) {
    const double normalised = total != 0 ? w[i - lo] / total : w[i - lo];
    taps.push_back({i, static_cast<int32_t>(std::floor(normalised * 4194304.0 + 0.5))});
  }
  return taps;
}

uint8_t fixed_point_sum(const std::vector<Tap>& taps, const std::function<int(int)>& sample) {
  int64_t sum = 1 << 21;
  for (const Tap& t : taps) sum += static_cast<int64_t>(sample(t.index)) * t.weight;
  return static_cast<uint8_t>(std::clamp<int64_t>(sum >> 22, 0, 255));
}

Bytes reference_resize(const Bytes& src, int src_w, int src_h, int channels, int dst_w, int dst_h) {
  Bytes horizontal(static_cast<size_t>(dst_w) * src_h * channels);
  for (int x = 0; x < dst_w; ++x) {
    const auto taps = reference_taps(src_w, dst_w, x);
    for (int y = 0; y < src_h; ++y) {
      for (int c = 0; c < channels; ++c) {
        horizontal[(static_cast<size_t>(y) * dst_w + x) * channels + c] = fixed_point_sum(
            taps, [&](int i) { return src[(static_cast<size_t>(y) * src_w + i) * channels + c]; });
      }
    }
  }
  Bytes out(static_cast<size_t>(dst_w) * dst_h * channels);
  for (int y = 0; y < dst_h; ++y) {
    const auto taps = reference_taps(src_h, dst_h, y);
    for (int x = 0; x < dst_w; ++x) {
      for (int c = 0; c < channels; ++c) {
        out[(static_cast<size_t>(y) * dst_w + x) * channels + c] = fixed_point_sum(
            taps,
            [&](int i) { return horizontal[(static_cast<size_t>(i) * dst_w + x) * channels + c]; });
      }
    }
  }
  return out;
}

TEST(PillowResize, MatchesPlainReferenceOnRandomSizes) {
  std::mt19937 rng(2024);
  auto size_in = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int up_x = 0, down_x = 0, up_y = 0, down_y = 0;
  for (int trial = 0; trial < 120; ++trial) {
    const int channels = size_in(1, 4);
    const int src_w = size_in(1, 70), src_h = size_in(1, 70);
    // Cover shrinking, growing and unchanged sizes in each axis.
    auto pick = [&](int src) {
      switch (trial % 3) {
        case 0:
          return size_in(1, src);
        case 1:
          return size_in(src, 3 * src + 2);
        default:
          return size_in(std::max(1, src / 4), 2 * src);
      }
    };
    const int dst_w = pick(src_w);
    const int dst_h = trial % 7 == 0 ? src_h : pick(src_h);
    up_x += dst_w > src_w, down_x += dst_w<src_w, up_y += dst_h> src_h, down_y += dst_h < src_h;
    Bytes src(static_cast<size_t>(src_w) * src_h * channels);
    for (auto& b : src) b = static_cast<uint8_t>(rng());
    SCOPED_TRACE(std::to_string(src_w) + "x" + std::to_string(src_h) + "x" +
                 std::to_string(channels) + " -> " + std::to_string(dst_w) + "x" +
                 std::to_string(dst_h));
    const Bytes ours = resize(src, src_w, src_h, channels, dst_w, dst_h);
    const Bytes expected = reference_resize(src, src_w, src_h, channels, dst_w, dst_h);
    ASSERT_EQ(ours.size(), expected.size());
    size_t differing = 0;
    for (size_t i = 0; i < ours.size(); ++i) differing += ours[i] != expected[i];
    ASSERT_EQ(differing, 0u) << "of " << ours.size() << " bytes";
  }
  EXPECT_GT(std::min({up_x, down_x, up_y, down_y}), 10);
}

// Worked by hand from Pillow's formulas: 2 -> 4 puts the centres at 0.25,
// 0.75, 1.25, 1.75 with windows {0}, {0:0.75, 1:0.25}, {0:0.25, 1:0.75}, {1}.
TEST(PillowResize, HandComputedUpscale) {
  EXPECT_EQ(resize({0, 255}, 2, 1, 1, 4, 1), (Bytes{0, 64, 191, 255}));
  EXPECT_EQ(resize({0, 255}, 1, 2, 1, 1, 4), (Bytes{0, 64, 191, 255}));
}

// 4 -> 2 doubles the support: output 0 reads {0.75, 0.75, 0.25}/1.75 of inputs
// 0..2, output 1 reads {0.25, 0.75, 0.75}/1.75 of inputs 1..3.
TEST(PillowResize, HandComputedDownscale) {
  EXPECT_EQ(resize({0, 100, 200, 40}, 4, 1, 1, 2, 1), (Bytes{71, 117}));
}

TEST(PillowResize, SameSizeIsCopyAndConstantStaysConstant) {
  Bytes src(5 * 3 * 3);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 11);
  EXPECT_EQ(resize(src, 5, 3, 3, 5, 3), src);
  EXPECT_EQ(resize(Bytes(7 * 9 * 2, 173), 7, 9, 2, 31, 4), Bytes(31 * 4 * 2, 173));
}

TEST(PillowResize, RejectsInvalidGeometry) {
  Bytes src(4, 0), dst(4, 0);
  constexpr PillowFilter kBilinear = PillowFilter::bilinear;
  EXPECT_THROW(pillow_resize(src.data(), 0, 1, 1, dst.data(), 1, 1, kBilinear), Error);
  EXPECT_THROW(pillow_resize(src.data(), 1, 1, 5, dst.data(), 1, 1, kBilinear), Error);
  EXPECT_THROW(pillow_resize(src.data(), 1, 1, 1, dst.data(), 1, -2, kBilinear), Error);
}

// The fixture goldens were made by Pillow 9.4 itself.
void expect_golden_resize(const std::string& source_name, const std::string& golden_name,
                          int size) {
  const std::string dir = testing::fixtures_dir() + "/images/";
  const RgbImage source = decode_image_file(dir + source_name);
  const RgbImage golden = decode_image_file(dir + golden_name);
  ASSERT_EQ(golden.width, size);
  ASSERT_EQ(golden.height, size);
  const Bytes ours = resize(source.pixels, source.width, source.height, 3, size, size);
  size_t differing = 0;
  for (size_t i = 0; i < ours.size(); ++i) differing += ours[i] != golden.pixels[i];
  EXPECT_EQ(differing, 0u) << "of " << ours.size() << " bytes";
}

TEST(PillowResize, GoldenAstronautUpscale) {
  expect_golden_resize("astronaut.png", "astronaut_1024.png", 1024);
}

TEST(PillowResize, GoldenCoffeeDownscale) {
  expect_golden_resize("coffee_1500x1100.png", "coffee_1500x1100_1024.png", 1024);
}

TEST(PillowResize, GoldenChelseaWidthDownHeightUp) {
  expect_golden_resize("chelsea_288x112.png", "chelsea_288x112_256.png", 256);
}

}  // namespace
}  // namespace sam2rt
