#include "model/sam_heads.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "decoder_goldens.h"
#include "model/mask_postprocess.h"

namespace sam2rt {
namespace {

using testing::max_abs_error;
using testing::micro_decoder_case;
using testing::vector_tensor;

constexpr double kLogitTolerance = 1e-4;
constexpr double kScoreTolerance = 1e-5;

// Thresholded masks (logit > 0) must equal the golden PNG except where the golden
// logit itself is within the logit tolerance of 0.
void expect_thresholded_masks_match(const Tensor& masks, const Tensor& golden_logits, const std::string& png_path) {
  const testing::PngImage png = testing::read_png(png_path, 1);
  const int64_t m = masks.dim(0), h = masks.dim(1), w = masks.dim(2);
  ASSERT_EQ(png.width, w);
  ASSERT_EQ(png.height, m * h);
  int64_t differing = 0, positive = 0;
  for (int64_t i = 0; i < masks.numel(); ++i) {
    const bool ours = masks[i] > 0.0f;
    const bool theirs = png.pixels[static_cast<size_t>(i)] != 0;
    positive += theirs;
    if (ours != theirs && std::fabs(golden_logits[i]) > kLogitTolerance) ++differing;
  }
  EXPECT_EQ(differing, 0) << png_path;
  EXPECT_GT(positive, 0) << png_path << " has no foreground; the comparison would be vacuous";
}

TEST(MaskDecoderMicro, DensePeMatchesGolden) {
  const auto& c = micro_decoder_case();
  const SamHeads heads(c.config, c.weights);
  EXPECT_LE(max_abs_error(heads.dense_pe(), c.at("dense_pe")), kLogitTolerance);
}

TEST(MaskDecoderMicro, AllRunsMatchGoldens) {
  const auto& c = micro_decoder_case();
  const SamHeads heads(c.config, c.weights);
  int runs = 0;
  for (const auto& g : c.prompts) {
    for (const auto& run : g.runs) {
      const bool multimask = run["multimask_output"].get<bool>();
      const std::string r = run["key_prefix"].get<std::string>();
      SCOPED_TRACE(r);
      ++runs;
      const MaskPrediction pred = heads.predict(c.features, g.prompt, multimask, c.orig_w, c.orig_h);

      EXPECT_LE(max_abs_error(pred.sparse_embeddings, c.at(g.name + ".sparse")), kLogitTolerance);
      EXPECT_LE(max_abs_error(pred.dense_embeddings, c.at(g.name + ".dense")), kLogitTolerance);
      EXPECT_EQ(pred.all_low_res_logits.shape(), c.at(g.name + ".all_low_res_logits").shape());
      EXPECT_LE(max_abs_error(pred.all_low_res_logits, c.at(g.name + ".all_low_res_logits")), kLogitTolerance);
      EXPECT_LE(max_abs_error(vector_tensor(pred.all_iou), c.at(g.name + ".all_iou")), kLogitTolerance);

      const Tensor& want_low_res = c.at(r + ".low_res_masks");
      EXPECT_EQ(pred.low_res_masks.shape(), want_low_res.shape());
      EXPECT_LE(max_abs_error(pred.low_res_masks, want_low_res), kLogitTolerance);
      const Tensor& want_masks = c.at(r + ".masks");
      EXPECT_EQ(pred.masks.shape(), want_masks.shape());
      EXPECT_LE(max_abs_error(pred.masks, want_masks), kLogitTolerance);
      EXPECT_LE(max_abs_error(vector_tensor(pred.iou_predictions), c.at(r + ".iou_predictions")), kScoreTolerance);
      EXPECT_NEAR(pred.object_score_logit, c.at(r + ".object_score_logits")[0], kScoreTolerance);

      const auto best = std::max_element(pred.iou_predictions.begin(), pred.iou_predictions.end());
      EXPECT_EQ(best - pred.iou_predictions.begin(), run["best_index"].get<int>());
      if (multimask) {
        EXPECT_EQ(pred.token_indices, (std::vector<int>{1, 2, 3}));
      } else {
        EXPECT_EQ(pred.single_mask_token_used, run["single_mask_token_used"].get<bool>());
        EXPECT_NEAR(pred.stability_score_token0, run["stability_score_token0"].get<double>(), 1e-6);
        ASSERT_EQ(pred.token_indices.size(), 1u);
        EXPECT_EQ(pred.token_indices[0], run["fallback_multimask_index"].get<int>() + 1);
      }
      expect_thresholded_masks_match(pred.masks, want_masks, testing::micro_dir() + "/masks/" + r + ".png");
    }
  }
  EXPECT_EQ(runs, 10);
}

TEST(MaskDecoderMicro, BatchEqualsOneByOne) {
  const auto& c = micro_decoder_case();
  const SamHeads heads(c.config, c.weights);
  // Mixed token counts (2, 3, 3, 4, 2), a duplicate and a mask-only prompt force grouping and reordering.
  // Batched GEMMs block differently, so agreement is to the golden tolerances, not bit for bit.
  std::vector<Prompt> prompts;
  for (const auto& g : c.prompts) prompts.push_back(g.prompt);
  prompts.push_back(c.prompts[1].prompt);
  Prompt mask_only;
  mask_only.mask_input = c.at("p5_point_mask.mask_input");
  prompts.push_back(mask_only);
  for (bool multimask : {true, false}) {
    const auto batch = heads.predict_batch(c.features, prompts, multimask, c.orig_w, c.orig_h);
    ASSERT_EQ(batch.size(), prompts.size());
    for (size_t i = 0; i < prompts.size(); ++i) {
      SCOPED_TRACE("prompt " + std::to_string(i) + (multimask ? " mm" : " sm"));
      const MaskPrediction single = heads.predict(c.features, prompts[i], multimask, c.orig_w, c.orig_h);
      EXPECT_EQ(batch[i].token_indices, single.token_indices);
      EXPECT_LE(max_abs_error(batch[i].masks, single.masks), kLogitTolerance);
      EXPECT_LE(max_abs_error(batch[i].low_res_masks, single.low_res_masks), kLogitTolerance);
      EXPECT_LE(max_abs_error(vector_tensor(batch[i].iou_predictions), vector_tensor(single.iou_predictions)), kScoreTolerance);
      EXPECT_NEAR(batch[i].object_score_logit, single.object_score_logit, kScoreTolerance);
    }
  }
}

TEST(MaskDecoderMicro, BatchRefusesAnyBadPrompt) {
  const auto& c = micro_decoder_case();
  const SamHeads heads(c.config, c.weights);
  std::vector<Prompt> prompts = {c.prompts[0].prompt, Prompt{}};
  EXPECT_THROW(heads.predict_batch(c.features, prompts, true, c.orig_w, c.orig_h), Error);
}

TEST(MaskDecoderMicro, RefusesFeaturesOfAnotherModel) {
  const auto& c = micro_decoder_case();
  const SamHeads heads(c.config, c.weights);
  DecoderFeatures wrong = c.features;
  wrong.feat_s0 = Tensor({1, 4, 32, 32});
  EXPECT_THROW(heads.predict(wrong, c.prompts[0].prompt, true, c.orig_w, c.orig_h), Error);
}

TEST(MaskSelection, StabilityScoreCountsBothThresholds) {
  const float logits[] = {1.0f, 0.06f, 0.04f, -0.04f, -0.06f, -1.0f};
  EXPECT_FLOAT_EQ(stability_score(logits, 6, 0.05), 2.0f / 4.0f);
  const float all_negative[] = {-1.0f, -2.0f};
  EXPECT_EQ(stability_score(all_negative, 2, 0.05), 1.0f);
}

TEST(MaskSelection, SingleMaskRuleKeepsStableTokenZeroElseBestMultimaskToken) {
  ModelConfig config;
  constexpr int64_t kPixels = 100;
  std::vector<float> logits(4 * kPixels, 5.0f);  // every token confidently positive: stability 1
  const float iou[] = {0.1f, 0.7f, 0.9f, 0.9f};
  MaskSelection stable = select_mask_tokens(logits.data(), kPixels, iou, 4, false, config);
  EXPECT_TRUE(stable.single_mask_token_used);
  EXPECT_EQ(stable.token_indices, std::vector<int>{0});

  // Token 0 with 97 of 100 pixels above +delta and 3 in (-delta, delta]: 0.97 < 0.98.
  for (int i = 0; i < 3; ++i) logits[static_cast<size_t>(i)] = 0.0f;
  MaskSelection fallback = select_mask_tokens(logits.data(), kPixels, iou, 4, false, config);
  EXPECT_FALSE(fallback.single_mask_token_used);
  EXPECT_FLOAT_EQ(fallback.stability_score_token0, 0.97f);
  EXPECT_EQ(fallback.token_indices, std::vector<int>{2});  // first of the tied best IoUs

  MaskSelection multi = select_mask_tokens(logits.data(), kPixels, iou, 4, true, config);
  EXPECT_EQ(multi.token_indices, (std::vector<int>{1, 2, 3}));
}

TEST(MaskSelection, LowResClampKeepsUpsamplingUnclamped) {
  Tensor low_res = Tensor::filled({1, 2, 2}, 40.0f);
  low_res[0] = -50.0f;
  const Tensor clamped = clamp_low_res_logits(low_res);
  EXPECT_EQ(clamped[0], -32.0f);
  EXPECT_EQ(clamped[1], 32.0f);
  EXPECT_EQ(low_res[1], 40.0f);
  EXPECT_EQ(upscale_masks_to_original(low_res, 2, 2)[1], 40.0f);
}

}  // namespace
}  // namespace sam2rt
