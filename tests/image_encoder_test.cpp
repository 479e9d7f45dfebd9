// The image encoder against the official-code goldens (micro), and its output
// shapes for every official preset.
#include "model/image_encoder.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <tuple>

#include "core/error.h"
#include "encoder_goldens.h"
#include "io/image.h"
#include "io/safetensors.h"
#include "model/config.h"
#include "model/preprocess.h"
#include "model/synthetic_weights.h"
#include "random_tensor.h"
#include "simd_levels.h"
#include "test_paths.h"

namespace sam2rt {
namespace {

TEST(ImageEncoderMicro, MatchesOfficialGoldens) {
  const ModelConfig config = testing::micro_config();
  testing::expect_micro_goldens(ImageEncoder(config, synthetic_weights(config, 0)));
}

TEST(ImageEncoderMicro, NeckLevelsAndPositionEncodingsOnlyWhenAsked) {
  const ModelConfig config = load_config_yaml(testing::fixtures_dir() + "/micro/sam2.1_micro.yaml");
  const ImageEncoder encoder(config, synthetic_weights(config, 0));
  const Tensor image = Tensor::filled({1, 3, 256, 256}, 0.5f);
  const EncoderOutputs plain = encoder.encode(image);
  EXPECT_TRUE(plain.neck_levels.empty());
  EXPECT_TRUE(plain.neck_pos.empty());
  const EncoderOutputs out = encoder.encode(image, {.neck_levels = true});
  EXPECT_TRUE(out.neck_pos.empty());
  ASSERT_EQ(out.neck_levels.size(), 3u);
  // Leaving the levels out changes none of the decoder's features.
  for (const auto& [a, b] : {std::pair{&plain.decoder.image_embed, &out.decoder.image_embed},
                             std::pair{&plain.decoder.feat_s1, &out.decoder.feat_s1},
                             std::pair{&plain.decoder.feat_s0, &out.decoder.feat_s0}}) {
    ASSERT_EQ(a->shape(), b->shape());
    for (int64_t i = 0; i < a->numel(); ++i) ASSERT_EQ((*a)[i], (*b)[i]) << i;
  }
}

// The video tracker's encode: the coarsest neck level alone, the same bits as
// among all three, and the same decoder features; position encodings still
// get every level.
TEST(ImageEncoderMicro, CoarsestNeckLevelAloneWhenThatIsAllThatIsAsked) {
  const ModelConfig config = load_config_yaml(testing::fixtures_dir() + "/micro/sam2.1_micro.yaml");
  const ImageEncoder encoder(config, synthetic_weights(config, 0));
  const Tensor image = testing::random_tensor({1, 3, 256, 256}, 4);
  const EncoderOutputs all = encoder.encode(image, {.neck_levels = true});
  const EncoderOutputs coarsest = encoder.encode(image, {.neck_levels = true, .coarsest_neck_level_only = true});
  ASSERT_EQ(coarsest.neck_levels.size(), 3u);
  EXPECT_TRUE(coarsest.neck_levels[0].empty());
  EXPECT_TRUE(coarsest.neck_levels[1].empty());
  ASSERT_EQ(coarsest.neck_levels[2].shape(), all.neck_levels[2].shape());
  EXPECT_TRUE(testing::same_bits(coarsest.neck_levels[2], all.neck_levels[2]));
  EXPECT_TRUE(testing::same_bits(coarsest.decoder.image_embed, all.decoder.image_embed) &&
              testing::same_bits(coarsest.decoder.feat_s1, all.decoder.feat_s1) &&
              testing::same_bits(coarsest.decoder.feat_s0, all.decoder.feat_s0));
  const EncoderOutputs with_pos = encoder.encode(
      image, {.neck_levels = true, .coarsest_neck_level_only = true, .position_encodings = true});
  ASSERT_EQ(with_pos.neck_levels.size(), 3u);
  for (const Tensor& level : with_pos.neck_levels) EXPECT_FALSE(level.empty());
  EXPECT_EQ(with_pos.neck_pos.size(), 3u);
}

// feat_s0 and feat_s1 are conv_s0 and conv_s1 of neck levels 0 and 1, whether
// the encoder composes those convs with the neck's lateral convs (levels 0 and
// 1 lateral-only, as in every SAM 2.1 config) or, where a level adds the
// top-down path, runs them on the level: each against the conv in double on
// the levels the same encode gives back.
TEST(ImageEncoderMicro, HighResFeaturesAreTheDecoderConvsOfLevels0And1) {
  for (const bool top_down_everywhere : {false, true}) {
    ModelConfig config = load_config_yaml(testing::fixtures_dir() + "/micro/sam2.1_micro.yaml");
    if (top_down_everywhere) config.neck.fpn_top_down_levels = {0, 1, 2, 3};
    const WeightMap weights = synthetic_weights(config, 0);
    const EncoderOutputs out =
        ImageEncoder(config, weights).encode(testing::random_tensor({1, 3, 256, 256}, 3), {.neck_levels = true});
    ASSERT_EQ(out.neck_levels.size(), 3u);
    for (const auto& [level, name, features] : {std::tuple{0, "conv_s0", &out.decoder.feat_s0},
                                                std::tuple{1, "conv_s1", &out.decoder.feat_s1}}) {
      const Tensor& map = out.neck_levels[static_cast<size_t>(level)];
      const Tensor& weight = weights.at(std::string("sam_mask_decoder.") + name + ".weight");
      const Tensor& bias = weights.at(std::string("sam_mask_decoder.") + name + ".bias");
      const int64_t in = map.dim(1), pixels = map.dim(2) * map.dim(3), outputs = weight.dim(0);
      ASSERT_EQ(features->shape(), (Shape{1, outputs, map.dim(2), map.dim(3)}));
      double worst = 0.0, largest = 0.0;
      for (int64_t o = 0; o < outputs; ++o)
        for (int64_t p = 0; p < pixels; ++p) {
          double want = bias[o];
          for (int64_t c = 0; c < in; ++c) want += static_cast<double>(weight[o * in + c]) * map[c * pixels + p];
          worst = std::max(worst, std::fabs(want - (*features)[o * pixels + p]));
          largest = std::max(largest, std::fabs(want));
        }
      EXPECT_LE(worst, 1e-5 * std::max(1.0, largest)) << name << (top_down_everywhere ? ", top-down levels" : "");
    }
  }
}

TEST(ImageEncoderMicro, RejectsWrongInputAndMissingWeights) {
  const ModelConfig config = load_config_yaml(testing::fixtures_dir() + "/micro/sam2.1_micro.yaml");
  WeightMap weights = synthetic_weights(config, 0);
  const ImageEncoder encoder(config, weights);
  EXPECT_THROW(encoder.encode(Tensor({1, 3, 128, 128})), Error);
  EXPECT_THROW(encoder.encode(Tensor({3, 256, 256})), Error);

  WeightMap incomplete;
  for (const auto& [key, tensor] : weights.all()) {
    if (key != "image_encoder.trunk.blocks.3.proj.weight") incomplete.insert(key, tensor);
  }
  try {
    ImageEncoder broken(config, incomplete);
    FAIL() << "missing weight accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("image_encoder.trunk.blocks.3.proj.weight"), std::string::npos) << e.what();
  }
}

TEST(TinyEncoder, MatchesOfficialGoldens) {
  const ModelConfig config = preset_config("tiny");
  testing::expect_tiny_goldens(ImageEncoder(config, synthetic_weights(config, 0)), config.image_size);
}

// Every official preset at its real width and depth, with the image size cut to
// 256 (patch grid 64, still tiled by window_spec[0] = 8) so a full encode stays
// quick: checks the shape of every output and that the values are finite.
TEST(EncoderShapes, AllPresetsAtImageSize256) {
  for (const std::string& name : preset_names()) {
    ModelConfig config = preset_config(name);
    config.image_size = 256;
    const int64_t c0 = config.trunk.embed_dim, d = config.neck.d_model;
    const ImageEncoder encoder(config, synthetic_weights(config, 0));
    const auto start = std::chrono::steady_clock::now();
    const EncoderOutputs out = encoder.encode(Tensor::filled({1, 3, 256, 256}, 0.25f), {.position_encodings = true, .trunk_outputs = true});
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("  %-10s encode at 256: %.2f s\n", name.c_str(), seconds);

    EXPECT_EQ(out.patch_embed_pos.shape(), (Shape{1, c0, 64, 64})) << name;
    ASSERT_EQ(out.trunk_stages.size(), 4u) << name;
    for (int64_t s = 0; s < 4; ++s) {
      EXPECT_EQ(out.trunk_stages[s].shape(), (Shape{1, c0 << s, 64 >> s, 64 >> s})) << name << " stage " << s;
    }
    ASSERT_EQ(out.neck_levels.size(), 3u) << name;
    ASSERT_EQ(out.neck_pos.size(), 3u) << name;
    for (int64_t l = 0; l < 3; ++l) {
      EXPECT_EQ(out.neck_levels[l].shape(), (Shape{1, d, 64 >> l, 64 >> l})) << name << " level " << l;
      EXPECT_EQ(out.neck_pos[l].shape(), (Shape{1, d, 64 >> l, 64 >> l})) << name << " pos " << l;
    }
    EXPECT_EQ(out.decoder.image_embed.shape(), (Shape{1, d, 16, 16})) << name;
    EXPECT_EQ(out.decoder.feat_s1.shape(), (Shape{1, d / 4, 32, 32})) << name;
    EXPECT_EQ(out.decoder.feat_s0.shape(), (Shape{1, d / 8, 64, 64})) << name;
    for (const Tensor* t : {&out.decoder.image_embed, &out.decoder.feat_s1, &out.decoder.feat_s0}) {
      EXPECT_TRUE(std::all_of(t->begin(), t->end(), [](float v) { return std::isfinite(v); })) << name;
    }
  }
}

}  // namespace
}  // namespace sam2rt
