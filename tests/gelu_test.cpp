#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/gelu.h"

namespace sam2rt {
namespace {

// Units in the last place between two floats of the same sign region.
int64_t ulp_distance(float a, float b) {
  if (a == b) return 0;
  int64_t steps = 0;
  for (float x = std::min(a, b); x < std::max(a, b) && steps < 1000; ++steps)
    x = std::nextafter(x, std::numeric_limits<float>::infinity());
  return steps;
}

class GeluLevel : public ::testing::TestWithParam<SimdLevel> {
 protected:
  void SetUp() override {
    if (GetParam() > best_simd_level()) GTEST_SKIP() << "this CPU lacks the instructions of this level";
  }
};

// The accuracy each level promises (gelu.h): one ulp at baseline, and an
// absolute error of 2.5e-7 * max(1, |x|) in single precision above it.
bool single_precision(SimdLevel level) { return level != SimdLevel::baseline; }

bool within_promise(SimdLevel level, float x, float y, float want) {
  const double abs_error = std::fabs(static_cast<double>(y) - want);
  if (single_precision(level)) return abs_error <= 2.5e-7 * std::max(1.0, std::fabs(static_cast<double>(x)));
  return ulp_distance(y, want) <= 1 || abs_error < 1e-14;
}

TEST_P(GeluLevel, MatchesErfGeluWithinItsUlps) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> x(1 << 20);
  for (float& v : x) v = normal(rng);
  // Piece borders, the tables' ends and beyond.
  for (float v : {-9.0f, -8.0f, -7.9999f, -7.0f, -1.0f, -0.0625f, 0.0f, -0.0f, 1e-30f, 0.0625f, 1.0f, 7.0f, 7.9999f,
                  8.0f, 12.0f, 1e6f, -1e6f})
    x.push_back(v);
  // The floats next to the ends of the tables, whose place in a piece rounds.
  for (float end : {-8.0f, 8.0f}) {
    float below = end, above = end;
    for (int step = 0; step < 4; ++step) {
      below = std::nextafter(below, -std::numeric_limits<float>::infinity());
      above = std::nextafter(above, std::numeric_limits<float>::infinity());
      x.push_back(below);
      x.push_back(above);
    }
  }
  std::vector<float> y = x;
  gelu_exact_inplace(y.data(), static_cast<int64_t>(y.size()), GetParam());
  int64_t differing = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const float want = gelu_exact_reference(x[i]);
    ASSERT_TRUE(within_promise(GetParam(), x[i], y[i], want)) << "x = " << x[i] << ": " << y[i] << " vs " << want;
    differing += y[i] != want;
  }
  // The double table's small absolute error shows only where the double result lies
  // near a float rounding boundary (and in the far negative tail, where Phi is tiny).
  if (!single_precision(GetParam())) {
    EXPECT_LT(differing, static_cast<int64_t>(x.size() / 20));
  }
}

TEST_P(GeluLevel, KeepsNonFiniteValuesLikeTheFormula) {
  float x[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
               -std::numeric_limits<float>::infinity()};
  gelu_exact_inplace(x, 3, GetParam());
  EXPECT_TRUE(std::isnan(x[0]));
  EXPECT_EQ(x[1], std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(x[2]));  // -inf * Phi(-inf) = -inf * 0
}

TEST_P(GeluLevel, TouchesOnlyTheGivenCount) {
  // What the level gives for 1.0: the reference's float, except at AVX2, whose
  // 1 - Q(1) rounds a last bit away (within its promise); a tail element must get
  // the same value as a whole register's.
  float one = 1.0f;
  gelu_exact_inplace(&one, 1, GetParam());
  if (GetParam() == SimdLevel::avx2) {
    ASSERT_TRUE(within_promise(GetParam(), 1.0f, one, gelu_exact_reference(1.0f))) << one;
  } else {
    ASSERT_EQ(one, gelu_exact_reference(1.0f));
  }
  for (int64_t count = 0; count <= 40; ++count) {
    std::vector<float> x(48, 1.0f);
    gelu_exact_inplace(x.data(), count, GetParam());
    for (int64_t i = 0; i < 48; ++i) {
      ASSERT_EQ(x[static_cast<size_t>(i)], i < count ? one : 1.0f) << count << " " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Levels, GeluLevel,
                         ::testing::Values(SimdLevel::baseline, SimdLevel::avx2, SimdLevel::avx512),
                         [](const ::testing::TestParamInfo<SimdLevel>& info) { return simd_level_name(info.param); });

TEST(Gelu, DefaultLevelMatchesReference) {
  float x[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(), 0.5f, -2.0f};
  gelu_exact_inplace(x, 4);
  EXPECT_TRUE(std::isnan(x[0]));
  EXPECT_EQ(x[1], std::numeric_limits<float>::infinity());
  EXPECT_NEAR(x[2], gelu_exact_reference(0.5f), 2.5e-7);
  EXPECT_NEAR(x[3], gelu_exact_reference(-2.0f), 5e-7);
}

}  // namespace
}  // namespace sam2rt
