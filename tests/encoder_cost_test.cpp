#include "model/encoder_cost.h"

#include <gtest/gtest.h>

namespace sam2rt {
namespace {

// Expected totals were computed independently (a Python walk over the official
// Hiera block list with window padding) to cross-check the C++ count.
TEST(EncoderCost, TinyAt1024) {
  const EncoderCost cost = encoder_cost(preset_config("tiny"));
  EXPECT_EQ(cost.total(), 146197003776);
  EXPECT_EQ(cost.patch_embed, 65536LL * 96 * 147);
  EXPECT_EQ(cost.attention, 42687413760LL);
  // Window padding's projections (2726756352) and levels 0 and 1 through the
  // composed convs (2818572288), counted apart by the same Python walk.
  EXPECT_EQ(cost.skipped, 2726756352LL + 2818572288LL);
  EXPECT_EQ(cost.executed(), 140651675136LL);
}

TEST(EncoderCost, GrowsWithTheVariant) {
  EXPECT_LT(encoder_cost(preset_config("tiny")).total(), encoder_cost(preset_config("small")).total());
  EXPECT_LT(encoder_cost(preset_config("small")).total(), encoder_cost(preset_config("base_plus")).total());
  EXPECT_LT(encoder_cost(preset_config("base_plus")).total(), encoder_cost(preset_config("large")).total());
}

}  // namespace
}  // namespace sam2rt
