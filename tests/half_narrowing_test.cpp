// float32 -> float16 / bfloat16 narrowing (encode --feature-dtype): exact on
// every representable value, ties to even, overflow to Inf, NaN kept.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "io/half.h"
#include "io/half_narrowing.h"

namespace sam2rt {
namespace {

bool is_nan_f16(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }

TEST(HalfNarrowing, EveryFloat16RoundTrips) {
  for (uint32_t h = 0; h <= 0xffffu; ++h) {
    const auto bits = static_cast<uint16_t>(h);
    const uint16_t back = float_to_f16(f16_to_float(bits));
    if (is_nan_f16(bits)) {
      EXPECT_TRUE(is_nan_f16(back)) << h;
    } else {
      EXPECT_EQ(back, bits) << h;
    }
  }
}

TEST(HalfNarrowing, EveryBfloat16RoundTrips) {
  for (uint32_t h = 0; h <= 0xffffu; ++h) {
    const auto bits = static_cast<uint16_t>(h);
    const float value = bf16_to_float(bits);
    if (std::isnan(value)) {
      EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(value)))) << h;
    } else {
      EXPECT_EQ(float_to_bf16(value), bits) << h;
    }
  }
}

// Between two neighbours, the nearer wins; at the midpoint the even one.
TEST(HalfNarrowing, RoundsToNearestTiesToEven) {
  for (uint16_t h : {uint16_t{0x3c00}, uint16_t{0x3c01}, uint16_t{0x0001}, uint16_t{0x0200}, uint16_t{0x7bfe}}) {
    const double low = f16_to_float(h), high = f16_to_float(static_cast<uint16_t>(h + 1));
    const uint16_t even = (h & 1u) == 0 ? h : static_cast<uint16_t>(h + 1);
    EXPECT_EQ(float_to_f16(static_cast<float>((low + high) / 2)), even) << h;
    EXPECT_EQ(float_to_f16(static_cast<float>(low + (high - low) * 0.25)), h) << h;
    EXPECT_EQ(float_to_f16(static_cast<float>(low + (high - low) * 0.75)), h + 1) << h;
  }
  for (uint16_t h : {uint16_t{0x3f80}, uint16_t{0x3f81}, uint16_t{0x0080}}) {
    const double low = bf16_to_float(h), high = bf16_to_float(static_cast<uint16_t>(h + 1));
    const uint16_t even = (h & 1u) == 0 ? h : static_cast<uint16_t>(h + 1);
    EXPECT_EQ(float_to_bf16(static_cast<float>((low + high) / 2)), even) << h;
    EXPECT_EQ(float_to_bf16(static_cast<float>(low + (high - low) * 0.25)), h) << h;
  }
}

TEST(HalfNarrowing, Float16OverflowsToInfinityAndUnderflowsToZero) {
  EXPECT_EQ(float_to_f16(65504.0f), 0x7bffu);
  EXPECT_EQ(float_to_f16(65519.0f), 0x7bffu);  // below the midpoint to 65536
  EXPECT_EQ(float_to_f16(65520.0f), 0x7c00u);  // the midpoint: even is Inf
  EXPECT_EQ(float_to_f16(-1e6f), 0xfc00u);
  EXPECT_EQ(float_to_f16(std::numeric_limits<float>::infinity()), 0x7c00u);
  EXPECT_EQ(float_to_f16(std::ldexp(1.0f, -26)), 0x0000u);
  EXPECT_EQ(float_to_f16(-std::ldexp(1.0f, -26)), 0x8000u);
  EXPECT_TRUE(is_nan_f16(float_to_f16(std::numeric_limits<float>::quiet_NaN())));
}

}  // namespace
}  // namespace sam2rt
