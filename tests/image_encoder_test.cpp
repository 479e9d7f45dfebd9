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

#include "core/error.h"
#include "feature_compare.h"
#include "io/image.h"
#include "io/safetensors.h"
#include "model/config.h"
#include "model/preprocess.h"
#include "model/synthetic_weights.h"
#include "test_paths.h"

namespace sam2rt {
namespace {

constexpr double kMaxOneMinusCos = 1e-9;
constexpr double kMaxAbsErr = 1e-4;

// Golden key -> our output, for every encoder output the fixtures store.
std::map<std::string, Tensor> by_golden_key(const EncoderOutputs& out) {
  std::map<std::string, Tensor> named = {
      {"trunk.patch_embed_pos", out.patch_embed_pos},
      {"image_embed", out.decoder.image_embed},
      {"feat_s1", out.decoder.feat_s1},
      {"feat_s0", out.decoder.feat_s0},
  };
  for (size_t i = 0; i < out.trunk_stages.size(); ++i) named["trunk.stage" + std::to_string(i + 1)] = out.trunk_stages[i];
  for (size_t i = 0; i < out.neck_levels.size(); ++i) named["neck.level" + std::to_string(i)] = out.neck_levels[i];
  for (size_t i = 0; i < out.neck_pos.size(); ++i) named["neck.pos" + std::to_string(i)] = out.neck_pos[i];
  return named;
}

void expect_matches_golden(const std::string& key, const Tensor& actual, const Tensor& golden) {
  ASSERT_EQ(actual.shape(), golden.shape()) << key;
  const testing::Agreement a = testing::agreement(actual, golden);
  EXPECT_LE(a.one_minus_cos, kMaxOneMinusCos) << key;
  EXPECT_LE(a.max_abs_err, kMaxAbsErr) << key;
  std::printf("  %-26s 1-cos %.2e  max|err| %.2e\n", key.c_str(), a.one_minus_cos, a.max_abs_err);
}

TEST(ImageEncoderMicro, MatchesOfficialGoldens) {
  const std::string dir = testing::fixtures_dir() + "/micro";
  const ModelConfig config = load_config_yaml(dir + "/sam2.1_micro.yaml");
  const ImageEncoder encoder(config, synthetic_weights(config, 0));
  const SafetensorsFile golden = read_safetensors(dir + "/golden.safetensors");
  const EncoderOutputs out = encoder.encode(golden.tensors.at("input"), {.position_encodings = true, .trunk_outputs = true});

  const std::map<std::string, Tensor> named = by_golden_key(out);
  ASSERT_EQ(named.size(), 14u);  // patch_embed_pos, 4 stages, 3 levels, 3 pos, 3 decoder features
  for (const auto& [key, tensor] : named) expect_matches_golden(key, tensor, golden.tensors.at(key));
}

TEST(ImageEncoderMicro, PositionEncodingsOnlyWhenAsked) {
  const ModelConfig config = load_config_yaml(testing::fixtures_dir() + "/micro/sam2.1_micro.yaml");
  const ImageEncoder encoder(config, synthetic_weights(config, 0));
  const EncoderOutputs out = encoder.encode(Tensor({1, 3, 256, 256}));
  EXPECT_TRUE(out.neck_pos.empty());
  EXPECT_EQ(out.neck_levels.size(), 3u);
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

struct Moments {
  double mean = 0.0, std = 0.0, l2 = 0.0;
};

Moments moments(const Tensor& t) {
  double sum = 0.0, squares = 0.0;
  for (float v : t) {
    sum += v;
    squares += static_cast<double>(v) * v;
  }
  Moments m;
  m.mean = sum / static_cast<double>(t.numel());
  double centred = 0.0;
  for (float v : t) centred += (v - m.mean) * (v - m.mean);
  m.std = std::sqrt(centred / static_cast<double>(t.numel()));
  m.l2 = std::sqrt(squares);
  return m;
}

void expect_relative(double actual, double expected, const std::string& what) {
  EXPECT_LE(std::fabs(actual - expected), 1e-4 * std::fabs(expected)) << what << ": " << actual << " vs " << expected;
}

// Case tiny of the fixtures: the official Tiny architecture at 1024 on the
// preprocessed astronaut. Every stored encoder key (full or decimated) must match,
// and the full tensors' mean/std/l2 must match stats.json. Slow in debug builds.
TEST(TinyEncoder, MatchesOfficialGoldens) {
  const std::string dir = testing::fixtures_dir();
  const ModelConfig config = preset_config("tiny");
  const ImageEncoder encoder(config, synthetic_weights(config, 0));
  const SafetensorsFile golden = read_safetensors(dir + "/tiny/golden.safetensors");
  std::ifstream stats_file(dir + "/tiny/stats.json");
  ASSERT_TRUE(stats_file.good());
  const nlohmann::json stats = nlohmann::json::parse(stats_file);

  const Tensor input = preprocess_image(decode_image_file(dir + "/images/astronaut.png"), config.image_size);
  expect_matches_golden("input.dec32", testing::decimate(input, 32), golden.tensors.at("input.dec32"));

  const auto start = std::chrono::steady_clock::now();
  const EncoderOutputs out = encoder.encode(input, {.position_encodings = true, .trunk_outputs = true});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("  tiny encode at 1024 (position encodings included): %.2f s\n", seconds);

  const std::map<std::string, Tensor> named = by_golden_key(out);
  ASSERT_EQ(named.size(), 14u);
  int compared = 0;
  for (const auto& [key, tensor] : named) {
    const auto& entry = stats.at(key);
    const std::string stored = entry.at("stored_as");
    const int64_t step = entry.at("dec");
    ASSERT_EQ(tensor.shape(), entry.at("shape").get<Shape>()) << key;
    expect_matches_golden(stored, step == 1 ? tensor : testing::decimate(tensor, step), golden.tensors.at(stored));
    const Moments m = moments(tensor);
    expect_relative(m.mean, entry.at("mean"), key + " mean");
    expect_relative(m.std, entry.at("std"), key + " std");
    expect_relative(m.l2, entry.at("l2"), key + " l2");
    ++compared;
  }
  // Every encoder key of the golden file was one of ours.
  int stored_encoder_keys = 0;
  for (const auto& [key, tensor] : golden.tensors) {
    for (const auto& [name, unused] : named) {
      if (key == name || key.rfind(name + ".dec", 0) == 0) ++stored_encoder_keys;
    }
  }
  EXPECT_EQ(stored_encoder_keys, compared);
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
