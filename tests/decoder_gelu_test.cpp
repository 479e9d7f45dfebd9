#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/decoder_gelu.h"

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

class DecoderGeluPath : public ::testing::TestWithParam<GeluPath> {
 protected:
  void SetUp() override {
    if (!gelu_path_supported(GetParam())) GTEST_SKIP() << "this CPU lacks the instructions of this path";
  }
};

// The accuracy each path promises (decoder_gelu.h): one ulp, or for the single-
// precision path an absolute error of 2.5e-7 * max(1, |x|).
bool single_precision(GeluPath path) { return path == GeluPath::kAvx512Float || path == GeluPath::kAvx2Float; }

bool within_promise(GeluPath path, float x, float y, float want) {
  const double abs_error = std::fabs(static_cast<double>(y) - want);
  if (single_precision(path)) return abs_error <= 2.5e-7 * std::max(1.0, std::fabs(static_cast<double>(x)));
  return ulp_distance(y, want) <= 1 || abs_error < 1e-14;
}

TEST_P(DecoderGeluPath, MatchesErfGeluWithinItsUlps) {
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
  gelu_exact_inplace_with(GetParam(), y.data(), static_cast<int64_t>(y.size()));
  int64_t differing = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const float want = gelu_exact_reference(x[i]);
    ASSERT_TRUE(within_promise(GetParam(), x[i], y[i], want)) << "x = " << x[i] << ": " << y[i] << " vs " << want;
    differing += y[i] != want;
  }
  // The double tables' small absolute error shows only where the double result lies
  // near a float rounding boundary (and in the far negative tail, where Phi is tiny).
  if (!single_precision(GetParam())) {
    EXPECT_LT(differing, static_cast<int64_t>(x.size() / 20));
  }
}

TEST_P(DecoderGeluPath, KeepsNonFiniteValuesLikeTheFormula) {
  float x[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
               -std::numeric_limits<float>::infinity()};
  gelu_exact_inplace_with(GetParam(), x, 3);
  EXPECT_TRUE(std::isnan(x[0]));
  EXPECT_EQ(x[1], std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(x[2]));  // -inf * Phi(-inf) = -inf * 0
}

TEST_P(DecoderGeluPath, TouchesOnlyTheGivenCount) {
  // What the path gives for 1.0: the reference's float, except on the AVX2 float
  // path, whose 1 - Q(1) rounds a last bit away (within its promise); a tail
  // element must get the same value as a whole register's.
  float one = 1.0f;
  gelu_exact_inplace_with(GetParam(), &one, 1);
  if (GetParam() == GeluPath::kAvx2Float) {
    ASSERT_TRUE(within_promise(GetParam(), 1.0f, one, gelu_exact_reference(1.0f))) << one;
  } else {
    ASSERT_EQ(one, gelu_exact_reference(1.0f));
  }
  for (int64_t count = 0; count <= 40; ++count) {
    std::vector<float> x(48, 1.0f);
    gelu_exact_inplace_with(GetParam(), x.data(), count);
    for (int64_t i = 0; i < 48; ++i) {
      ASSERT_EQ(x[static_cast<size_t>(i)], i < count ? one : 1.0f) << count << " " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Paths, DecoderGeluPath,
                         ::testing::Values(GeluPath::kPortable, GeluPath::kAvx2, GeluPath::kAvx512,
                                           GeluPath::kAvx512Float, GeluPath::kAvx2Float),
                         [](const ::testing::TestParamInfo<GeluPath>& info) {
                           switch (info.param) {
                             case GeluPath::kPortable:
                               return "Portable";
                             case GeluPath::kAvx2:
                               return "Avx2";
                             case GeluPath::kAvx512:
                               return "Avx512";
                             case GeluPath::kAvx512Float:
                               return "Avx512Float";
                             case GeluPath::kAvx2Float:
                               return "Avx2Float";
                           }
                           return "Unknown";
                         });

TEST(DecoderGelu, Avx2PathEqualsPortableLoopBitForBit) {
  if (!gelu_path_supported(GeluPath::kAvx2)) GTEST_SKIP() << "no AVX2";
  std::mt19937 rng(9);
  std::normal_distribution<float> normal(0.0f, 4.0f);
  std::vector<float> x(100003);  // not a multiple of the vector width
  for (float& v : x) v = normal(rng);
  x[5] = std::numeric_limits<float>::quiet_NaN();
  x[6] = -std::numeric_limits<float>::infinity();
  x[7] = 8.0f;
  x[8] = -8.0f;
  std::vector<float> fast = x, portable = x;
  gelu_exact_inplace_with(GeluPath::kAvx2, fast.data(), static_cast<int64_t>(fast.size()));
  gelu_exact_inplace_with(GeluPath::kPortable, portable.data(), static_cast<int64_t>(portable.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(portable[i])) {
      EXPECT_TRUE(std::isnan(fast[i])) << "x = " << x[i];
    } else {
      ASSERT_EQ(fast[i], portable[i]) << "x = " << x[i];
    }
  }
}

TEST(DecoderGelu, DefaultPathMatchesReference) {
  float x[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(), 0.5f, -2.0f};
  gelu_exact_inplace(x, 4);
  EXPECT_TRUE(std::isnan(x[0]));
  EXPECT_EQ(x[1], std::numeric_limits<float>::infinity());
  EXPECT_NEAR(x[2], gelu_exact_reference(0.5f), 2.5e-7);
  EXPECT_NEAR(x[3], gelu_exact_reference(-2.0f), 5e-7);
}

}  // namespace
}  // namespace sam2rt
