#include "model/sam_heads.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
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

TEST(MaskDecoderMicro, DensePeMatchesGolden) {
  const auto& c = micro_decoder_case();
  const SamHeads heads(c.config, c.weights);
  EXPECT_LE(max_abs_error(heads.dense_pe(), c.at("dense_pe")), kLogitTolerance);
}

TEST(MaskDecoderMicro, AllRunsMatchGoldens) {
  const auto& c = micro_decoder_case();
  const SamHeads heads(c.config, c.weights);
  const int runs = testing::expect_golden_runs_match(
      c, heads, {kLogitTolerance, kScoreTolerance}, [&](const testing::GoldenRun& r, const MaskPrediction& pred) {
        const std::string& name = r.prompt.name;
        EXPECT_LE(max_abs_error(pred.dense_embeddings, c.at(name + ".dense")), kLogitTolerance);
        // Every token's logits for a single mask; for a multimask prediction
        // by the fast path tokens 1.., the only ones it selects (the official
        // decoder's masks[:, 1:]); the reference decoder (prompts with a mask
        // input) decodes every token.
        const Tensor& want_all = c.at(name + ".all_low_res_logits");
        const bool fast_path = r.prompt.prompt.mask_input.empty();
        const int64_t tokens = want_all.dim(1), first = r.multimask && fast_path ? 1 : 0;
        ASSERT_EQ(pred.all_low_res_first_token, first);
        const Tensor want_decoded =
            want_all.reshaped({tokens, want_all.dim(2), want_all.dim(3)}).rows(first, tokens - first);
        ASSERT_EQ(pred.all_low_res_logits.shape(), (Shape{1, tokens - first, want_all.dim(2), want_all.dim(3)}));
        EXPECT_LE(max_abs_error(pred.all_low_res_logits.reshaped(want_decoded.shape()), want_decoded),
                  kLogitTolerance);
        EXPECT_LE(max_abs_error(vector_tensor(pred.all_iou), c.at(name + ".all_iou")), kLogitTolerance);

        const Tensor& want_low_res = c.at(r.key_prefix + ".low_res_masks");
        EXPECT_EQ(pred.low_res_masks.shape(), want_low_res.shape());
        EXPECT_LE(max_abs_error(pred.low_res_masks, want_low_res), kLogitTolerance);
        const Tensor& want_masks = c.at(r.key_prefix + ".masks");
        EXPECT_EQ(pred.masks.shape(), want_masks.shape());
        EXPECT_LE(max_abs_error(pred.masks, want_masks), kLogitTolerance);
        // Exempt where the golden logit itself is within the tolerance of 0.
        testing::expect_thresholded_masks_match(
            pred.masks, testing::micro_dir() + "/masks/" + r.key_prefix + ".png",
            [&](int64_t i) { return std::fabs(want_masks[i]) > kLogitTolerance; });
      });
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

// A batch's prompts with a mask input go to the reference decoder, one per
// thread at a time, each thread past the first with a decoder of its own
// (SamHeads::reference_decoder): every prompt gets the bits it gets alone.
TEST(MaskDecoderMicro, MaskInputPromptsAcrossThreadsEqualEachAlone) {
  const auto& c = micro_decoder_case();
  const SamHeads heads(c.config, c.weights);
  std::vector<Prompt> prompts;
  for (int copy = 0; copy < 3; ++copy) {
    for (const auto& g : c.prompts) {
      if (!g.prompt.mask_input.empty()) prompts.push_back(g.prompt);
    }
  }
  ASSERT_GE(prompts.size(), 3u);
  const auto batch = heads.predict_batch(c.features, prompts, true, c.orig_w, c.orig_h);
  ASSERT_EQ(batch.size(), prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    SCOPED_TRACE("prompt " + std::to_string(i));
    const MaskPrediction single = heads.predict(c.features, prompts[i], true, c.orig_w, c.orig_h);
    ASSERT_EQ(batch[i].low_res_masks.numel(), single.low_res_masks.numel());
    EXPECT_EQ(std::memcmp(batch[i].low_res_masks.data(), single.low_res_masks.data(),
                          sizeof(float) * static_cast<size_t>(single.low_res_masks.numel())),
              0);
    EXPECT_EQ(batch[i].iou_predictions, single.iou_predictions);
    EXPECT_EQ(batch[i].object_score_logit, single.object_score_logit);
  }
}

TEST(MaskDecoderMicro, LowResBatchSkipsOnlyPromptsWhoseMasksAllFailTheIouFilter) {
  const auto& c = micro_decoder_case();
  const SamHeads heads(c.config, c.weights);
  const HeadsImage image = heads.prepare_image(c.features);
  std::vector<Prompt> prompts;
  for (const auto& g : c.prompts) {
    if (g.prompt.mask_input.empty()) prompts.push_back(g.prompt);
  }
  const auto all = heads.predict_batch_low_res(image, prompts, true, c.orig_w, c.orig_h);
  // A threshold between the prompts' best IoUs, so some are skipped and some not.
  std::vector<float> best;
  for (const MaskPrediction& p : all) best.push_back(*std::max_element(p.iou_predictions.begin(), p.iou_predictions.end()));
  std::vector<float> sorted = best;
  std::sort(sorted.begin(), sorted.end());
  const float threshold = sorted[sorted.size() / 2];
  const auto some = heads.predict_batch_low_res(image, prompts, true, c.orig_w, c.orig_h, threshold);
  ASSERT_EQ(some.size(), all.size());
  int skipped = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    SCOPED_TRACE("prompt " + std::to_string(i));
    EXPECT_EQ(some[i].iou_predictions, all[i].iou_predictions);
    EXPECT_EQ(some[i].token_indices, all[i].token_indices);
    if (best[i] > threshold) {
      ASSERT_EQ(some[i].low_res_masks.numel(), all[i].low_res_masks.numel());
      EXPECT_EQ(std::memcmp(some[i].low_res_masks.data(), all[i].low_res_masks.data(),
                            sizeof(float) * all[i].low_res_masks.numel()),
                0);
    } else {
      EXPECT_TRUE(some[i].low_res_masks.empty());
      ++skipped;
    }
  }
  EXPECT_GE(skipped, 1);
  EXPECT_LT(skipped, static_cast<int>(prompts.size()));
  // Single-mask output selects by the masks themselves: never skipped.
  for (const MaskPrediction& p : heads.predict_batch_low_res(image, prompts, false, c.orig_w, c.orig_h, 1.0f)) {
    EXPECT_FALSE(p.low_res_masks.empty());
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
