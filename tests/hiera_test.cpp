// Hiera block layout: the one-block window lag, q-pool blocks, widths and heads.
#include "model/hiera.h"

#include <gtest/gtest.h>

#include "model/config.h"
#include "test_paths.h"

namespace sam2rt {
namespace {

struct Expected {
  int window;
  bool q_pool;
  int dim, dim_out, heads;
};

void expect_specs(const std::vector<HieraBlockSpec>& specs, const std::vector<Expected>& expected) {
  ASSERT_EQ(specs.size(), expected.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    EXPECT_EQ(specs[i].window, expected[i].window) << "block " << i;
    EXPECT_EQ(specs[i].q_pool, expected[i].q_pool) << "block " << i;
    EXPECT_EQ(specs[i].dim, expected[i].dim) << "block " << i;
    EXPECT_EQ(specs[i].dim_out, expected[i].dim_out) << "block " << i;
    EXPECT_EQ(specs[i].heads, expected[i].heads) << "block " << i;
  }
}

TEST(HieraBlockSpecs, MicroFollowsTheWindowLag) {
  // fixtures README: 8, 8 (q-pool), 6, 6 (q-pool), global, 6 (q-pool); heads 1/2/4/8.
  const ModelConfig config = load_config_yaml(testing::fixtures_dir() + "/micro/sam2.1_micro.yaml");
  expect_specs(hiera_block_specs(config.trunk), {{8, false, 16, 16, 1},
                                                 {8, true, 16, 32, 2},
                                                 {6, false, 32, 32, 2},
                                                 {6, true, 32, 64, 4},
                                                 {0, false, 64, 64, 4},
                                                 {6, true, 64, 128, 8}});
  EXPECT_EQ(hiera_stage_ends(config.trunk), (std::vector<int>{0, 2, 4, 5}));
}

TEST(HieraBlockSpecs, TinyFollowsTheWindowLag) {
  // fixtures README: 8, 8 (q), 4, 4 (q), 14, G, 14, G, 14, G, 14 (q), 7.
  const ModelConfig config = preset_config("tiny");
  expect_specs(hiera_block_specs(config.trunk), {{8, false, 96, 96, 1},
                                                 {8, true, 96, 192, 2},
                                                 {4, false, 192, 192, 2},
                                                 {4, true, 192, 384, 4},
                                                 {14, false, 384, 384, 4},
                                                 {0, false, 384, 384, 4},
                                                 {14, false, 384, 384, 4},
                                                 {0, false, 384, 384, 4},
                                                 {14, false, 384, 384, 4},
                                                 {0, false, 384, 384, 4},
                                                 {14, true, 384, 768, 8},
                                                 {7, false, 768, 768, 8}});
  EXPECT_EQ(hiera_stage_ends(config.trunk), (std::vector<int>{0, 2, 9, 11}));
}

TEST(HieraBlockSpecs, PositionEmbeddingTilesTheWindowEmbedding) {
  // A constant background embedding resizes to the same constant, so what is
  // left is the window embedding repeated with period window_spec[0].
  Tensor background = Tensor::filled({1, 2, 3, 3}, 0.5f);
  Tensor window({1, 2, 4, 4});
  for (int64_t i = 0; i < window.numel(); ++i) window[i] = static_cast<float>(i);
  const Tensor pos = hiera_position_embedding(background, window, 8, 12);
  ASSERT_EQ(pos.shape(), (Shape{8, 12, 2}));
  for (int64_t y = 0; y < 8; ++y)
    for (int64_t x = 0; x < 12; ++x)
      for (int64_t c = 0; c < 2; ++c)
        EXPECT_FLOAT_EQ(pos[(y * 12 + x) * 2 + c], 0.5f + window[(c * 4 + y % 4) * 4 + x % 4]);
}

}  // namespace
}  // namespace sam2rt
