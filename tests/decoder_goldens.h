#pragma once

// Shared loading of the decoder goldens (micro, tiny) for the prompt-encoder and mask-decoder tests.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <png.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "io/safetensors.h"
#include "model/config.h"
#include "model/features.h"
#include "model/prompt.h"
#include "model/sam_heads.h"
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

// Thresholded masks (logit > 0) against a golden mask PNG (the masks stacked
// vertically). A pixel that differs counts only where `clear_of_threshold(i)`:
// float noise may flip a logit that lies within the tolerance of 0.
template <typename ClearOfThreshold>
void expect_thresholded_masks_match(const Tensor& masks, const std::string& png_path,
                                    ClearOfThreshold clear_of_threshold) {
  const PngImage png = read_png(png_path, 1);
  ASSERT_EQ(png.width, masks.dim(2));
  ASSERT_EQ(png.height, masks.dim(0) * masks.dim(1));
  int64_t differing = 0, positive = 0;
  for (int64_t i = 0; i < masks.numel(); ++i) {
    const bool theirs = png.pixels[static_cast<size_t>(i)] != 0;
    positive += theirs;
    if ((masks[i] > 0.0f) != theirs && clear_of_threshold(i)) ++differing;
  }
  EXPECT_EQ(differing, 0) << png_path;
  EXPECT_GT(positive, 0) << png_path << " has no foreground; the comparison would be vacuous";
}

struct DecoderTolerances {
  double logit = 0;  // embeddings and mask logits
  double score = 0;  // IoU predictions and the object score
  // The single-mask stability score of token 0 (a fraction of pixels), or
  // none: not compared (fp16 storage, whose logit errors may move pixels across
  // its +-1 thresholds; the selection it decides is compared either way).
  std::optional<double> stability = 1e-6;
};

// One golden run (a prompt with multimask on or off) of a case.
struct GoldenRun {
  const GoldenPrompt& prompt;
  const nlohmann::json& run;
  std::string key_prefix;  // its golden keys: <key_prefix>.masks, ...
  bool multimask = false;
};

// Predicts every golden run of a case and checks what all cases store alike:
// sparse embeddings, IoU and object scores, the best mask, and which mask
// token was returned (multimask: 1..3; single: token 0 if stable, else the
// best multimask token). `case_checks(run, prediction)` then checks what each
// case stores its own way (full or decimated logits, masks). Returns the
// number of runs.
template <typename CaseChecks>
int expect_golden_runs_match(const DecoderCase& c, const SamHeads& heads, DecoderTolerances tolerance,
                             CaseChecks case_checks) {
  int runs = 0;
  const HeadsImage image = heads.prepare_image(c.features);
  for (const auto& g : c.prompts) {
    for (const auto& run : g.runs) {
      const GoldenRun r{g, run, run["key_prefix"].get<std::string>(), run["multimask_output"].get<bool>()};
      SCOPED_TRACE(r.key_prefix);
      ++runs;
      const MaskPrediction pred = heads.predict(image, g.prompt, r.multimask, c.orig_w, c.orig_h);

      EXPECT_LE(max_abs_error(pred.sparse_embeddings, c.at(g.name + ".sparse")), tolerance.logit);
      EXPECT_LE(max_abs_error(vector_tensor(pred.iou_predictions), c.at(r.key_prefix + ".iou_predictions")),
                tolerance.score);
      EXPECT_NEAR(pred.object_score_logit, c.at(r.key_prefix + ".object_score_logits")[0], tolerance.score);
      const auto best = std::max_element(pred.iou_predictions.begin(), pred.iou_predictions.end());
      EXPECT_EQ(best - pred.iou_predictions.begin(), run["best_index"].get<int>());
      if (r.multimask) {
        EXPECT_EQ(pred.token_indices, (std::vector<int>{1, 2, 3}));
      } else {
        const bool single = run["single_mask_token_used"].get<bool>();
        EXPECT_EQ(pred.single_mask_token_used, single);
        if (tolerance.stability) {
          EXPECT_NEAR(pred.stability_score_token0, run["stability_score_token0"].get<double>(), *tolerance.stability);
        }
        EXPECT_EQ(pred.token_indices, std::vector<int>{single ? 0 : run["fallback_multimask_index"].get<int>() + 1});
      }
      case_checks(r, pred);
    }
  }
  return runs;
}

}  // namespace sam2rt::testing
