#pragma once

// The image encoder's golden checks, shared by every backend's tests: micro end
// to end and case tiny of the fixtures, at the same tolerances everywhere.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>

#include "feature_compare.h"
#include "io/image.h"
#include "io/safetensors.h"
#include "model/config.h"
#include "model/image_encoder.h"
#include "model/preprocess.h"
#include "test_paths.h"

namespace sam2rt::testing {

constexpr double kMaxOneMinusCos = 1e-9;
constexpr double kMaxAbsErr = 1e-4;

// Golden key -> our output, for every encoder output the fixtures store.
inline std::map<std::string, Tensor> by_golden_key(const EncoderOutputs& out) {
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

inline void expect_matches_golden(const std::string& key, const Tensor& actual, const Tensor& golden) {
  ASSERT_EQ(actual.shape(), golden.shape()) << key;
  const Agreement a = agreement(actual, golden);
  EXPECT_LE(a.one_minus_cos, kMaxOneMinusCos) << key;
  EXPECT_LE(a.max_abs_err, kMaxAbsErr) << key;
  std::printf("  %-26s 1-cos %.2e  max|err| %.2e\n", key.c_str(), a.one_minus_cos, a.max_abs_err);
}

// Case micro: the micro config on synthetic weights (salt 0) against every output
// of the official code.
inline ModelConfig micro_config() { return load_config_yaml(fixtures_dir() + "/micro/sam2.1_micro.yaml"); }

inline void expect_micro_goldens(const ImageEncoder& encoder) {
  const SafetensorsFile golden = read_safetensors(fixtures_dir() + "/micro/golden.safetensors");
  const EncoderOutputs out = encoder.encode(golden.tensors.at("input"), {.position_encodings = true, .trunk_outputs = true});

  const std::map<std::string, Tensor> named = by_golden_key(out);
  ASSERT_EQ(named.size(), 14u);  // patch_embed_pos, 4 stages, 3 levels, 3 pos, 3 decoder features
  for (const auto& [key, tensor] : named) expect_matches_golden(key, tensor, golden.tensors.at(key));
}

struct Moments {
  double mean = 0.0, std = 0.0, l2 = 0.0;
};

inline Moments moments(const Tensor& t) {
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

inline void expect_relative(double actual, double expected, const std::string& what) {
  EXPECT_LE(std::fabs(actual - expected), 1e-4 * std::fabs(expected)) << what << ": " << actual << " vs " << expected;
}

// Case tiny of the fixtures: the official Tiny architecture at 1024 (synthetic
// weights, salt 0) on the preprocessed astronaut. Every stored encoder key (full
// or decimated) must match, and the full tensors' mean/std/l2 must match
// stats.json. Slow in debug builds and on a CPU Vulkan device.
inline void expect_tiny_goldens(const ImageEncoder& encoder, int64_t encoder_image_size) {
  const std::string dir = fixtures_dir();
  const SafetensorsFile golden = read_safetensors(dir + "/tiny/golden.safetensors");
  std::ifstream stats_file(dir + "/tiny/stats.json");
  ASSERT_TRUE(stats_file.good());
  const nlohmann::json stats = nlohmann::json::parse(stats_file);

  const Tensor input = preprocess_image(decode_image_file(dir + "/images/astronaut.png"), encoder_image_size);
  expect_matches_golden("input.dec32", decimate(input, 32), golden.tensors.at("input.dec32"));

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
    expect_matches_golden(stored, step == 1 ? tensor : decimate(tensor, step), golden.tensors.at(stored));
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


}  // namespace sam2rt::testing
