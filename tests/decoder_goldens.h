#pragma once

// Shared loading of the decoder goldens (micro, tiny) for the prompt-encoder and mask-decoder tests.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <png.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "io/safetensors.h"
#include "model/config.h"
#include "model/features.h"
#include "model/prompt.h"
#include "model/synthetic_weights.h"
#include "test_paths.h"

namespace sam2rt::testing {

struct GoldenPrompt {
  std::string name;
  Prompt prompt;
  nlohmann::json runs;
};

struct DecoderCase {
  ModelConfig config;
  WeightMap weights;
  SafetensorsFile golden;
  DecoderFeatures features;
  std::vector<GoldenPrompt> prompts;
  int orig_w = 0, orig_h = 0;

  const Tensor& at(const std::string& key) const {
    auto it = golden.tensors.find(key);
    if (it == golden.tensors.end()) throw std::runtime_error("golden key missing: " + key);
    return it->second;
  }
};

inline std::string micro_dir() { return fixtures_dir() + "/micro"; }
inline std::string tiny_dir() { return fixtures_dir() + "/tiny"; }

// Config, weights (salt 0), goldens and prompts of a case; features are left to the caller.
inline DecoderCase load_decoder_case(const std::string& dir, const ModelConfig& config) {
  DecoderCase m;
  m.config = config;
  m.weights = synthetic_weights(m.config, 0);
  m.golden = read_safetensors(dir + "/golden.safetensors");
  std::ifstream in(dir + "/prompts.json");
  const nlohmann::json doc = nlohmann::json::parse(in);
  m.orig_h = doc["orig_hw"][0].get<int>();
  m.orig_w = doc["orig_hw"][1].get<int>();
  for (const auto& p : doc["prompts"]) {
    GoldenPrompt g;
    g.name = p["name"].get<std::string>();
    if (p.contains("points")) {
      for (size_t i = 0; i < p["points"].size(); ++i) {
        g.prompt.points.push_back(
            {p["points"][i][0].get<float>(), p["points"][i][1].get<float>(), p["labels"][i].get<int>()});
      }
    }
    if (p.contains("box")) {
      g.prompt.box = std::array<float, 4>{p["box"][0].get<float>(), p["box"][1].get<float>(), p["box"][2].get<float>(),
                                          p["box"][3].get<float>()};
    }
    if (p.contains("mask_input_key")) g.prompt.mask_input = m.at(p["mask_input_key"].get<std::string>());
    g.runs = p["runs"];
    m.prompts.push_back(std::move(g));
  }
  return m;
}

// The micro case carries full decoder features in its goldens.
inline const DecoderCase& micro_decoder_case() {
  static const DecoderCase c = [] {
    DecoderCase m = load_decoder_case(micro_dir(), load_config_yaml(micro_dir() + "/sam2.1_micro.yaml"));
    m.features = {m.at("image_embed"), m.at("feat_s1"), m.at("feat_s0")};
    return m;
  }();
  return c;
}

struct PngImage {
  int width = 0, height = 0, channels = 0;
  std::vector<uint8_t> pixels;  // row-major, interleaved channels
};

// channels 1 (gray) or 3 (RGB), converted by libpng's simplified API.
inline PngImage read_png(const std::string& path, int channels) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  PngImage out;
  if (!png_image_begin_read_from_file(&image, path.c_str())) {
    ADD_FAILURE() << "cannot read " << path << ": " << image.message;
    return out;
  }
  image.format = channels == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
  out.width = static_cast<int>(image.width);
  out.height = static_cast<int>(image.height);
  out.channels = channels;
  out.pixels.resize(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, out.pixels.data(), 0, nullptr)) {
    ADD_FAILURE() << "cannot decode " << path << ": " << image.message;
  }
  return out;
}

// Max |a - b| after checking that the element counts agree (shapes may differ by unit axes).
inline double max_abs_error(const Tensor& actual, const Tensor& expected) {
  EXPECT_EQ(actual.numel(), expected.numel())
      << shape_to_string(actual.shape()) << " vs " << shape_to_string(expected.shape());
  if (actual.numel() != expected.numel()) return INFINITY;
  double worst = 0;
  for (int64_t i = 0; i < actual.numel(); ++i) {
    const double d = std::fabs(static_cast<double>(actual[i]) - expected[i]);
    if (std::isnan(d)) return INFINITY;
    worst = std::max(worst, d);
  }
  return worst;
}

inline Tensor vector_tensor(const std::vector<float>& v) {
  Tensor t({static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.begin());
  return t;
}

}  // namespace sam2rt::testing
