#pragma once

// The micro decoder goldens for MaskDecoder on any backend
// (mask_decoder_reference_test.cpp, vulkan_mask_decoder_test.cpp).

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "decoder_goldens.h"
#include "model/mask_decoder.h"
#include "model/low_rank_mask_decoder.h"
#include "model/mask_postprocess.h"
#include "model/prompt_encoder.h"
#include "random_tensor.h"

namespace sam2rt::testing {

// The decoder goldens' tolerances (mask_decoder_test.cpp).
constexpr double kDeviceDecoderLogitTolerance = 1e-4;
constexpr double kDeviceDecoderScoreTolerance = 1e-5;

inline std::unique_ptr<MaskDecoder> micro_decoder(std::shared_ptr<Backend> backend) {
  const DecoderCase& c = micro_decoder_case();
  const PromptEncoder prompt_encoder(c.config, c.weights);
  return std::make_unique<MaskDecoder>(c.config, c.weights, prompt_encoder.dense_pe(),
                                             prompt_encoder.embed_dense(Prompt{}), std::move(backend));
}

// The largest errors expect_micro_goldens met, against the goldens or the CPU decoder.
struct DecoderErrors {
  int runs = 0;              // golden runs checked
  double logit = 0;          // mask logits
  double score = 0;          // IoUs and object scores
};

// Decodes every golden prompt (one with a mask input) on the micro features at `tolerance`.
inline DecoderErrors expect_micro_goldens(
    const MaskDecoder& decoder, const DeviceDecoderFeatures& features,
    DecoderTolerances tolerance = {kDeviceDecoderLogitTolerance, kDeviceDecoderScoreTolerance}) {
  const DecoderCase& c = micro_decoder_case();
  const PromptEncoder prompt_encoder(c.config, c.weights);
  const LowRankMaskDecoder cpu(c.config, c.weights, prompt_encoder.dense_pe());
  const DecoderImageState image = cpu.prepare_image(c.features, prompt_encoder.embed_dense(Prompt{}), 1);
  const int64_t l = c.config.low_res_mask_size(), pixels = l * l;
  const int tokens = decoder.num_mask_tokens();
  DecoderErrors worst;
  auto expect_logits = [&](const Tensor& actual, const Tensor& expected) {
    const double error = max_abs_error(actual, expected);
    EXPECT_LE(error, tolerance.logit);
    worst.logit = std::max(worst.logit, error);
  };
  auto expect_scores = [&](const Tensor& actual, const Tensor& expected) {
    const double error = max_abs_error(actual, expected);
    EXPECT_LE(error, tolerance.score);
    worst.score = std::max(worst.score, error);
  };
  auto scalar = [](float value) { return vector_tensor({value}); };
  for (const GoldenPrompt& g : c.prompts) {
    SCOPED_TRACE(g.name);
    const Tensor sparse = prompt_encoder.embed_sparse(g.prompt, c.orig_w, c.orig_h);
    const MaskDecoderOutput out = decoder.predict_masks(features, sparse, g.prompt.mask_input);
    EXPECT_EQ(out.masks.shape(), (Shape{tokens, l, l}));
    expect_logits(out.masks, c.at(g.name + ".all_low_res_logits"));
    expect_scores(out.iou, c.at(g.name + ".all_iou"));
    for (const auto& run : g.runs) {
      const std::string key = run["key_prefix"].get<std::string>();
      const bool multimask = run["multimask_output"].get<bool>();
      SCOPED_TRACE(key);
      ++worst.runs;
      expect_scores(scalar(out.object_score_logit), c.at(key + ".object_score_logits"));
      // The selection the predictor makes from these outputs.
      const MaskSelection selection =
          select_mask_tokens(out.masks.data(), pixels, out.iou.data(), tokens, multimask, c.config);
      if (multimask) {
        EXPECT_EQ(selection.token_indices, (std::vector<int>{1, 2, 3}));
      } else {
        const bool single = run["single_mask_token_used"].get<bool>();
        EXPECT_EQ(selection.single_mask_token_used, single);
        EXPECT_EQ(selection.token_indices,
                  std::vector<int>{single ? 0 : run["fallback_multimask_index"].get<int>() + 1});
      }
      const int64_t first = selection.token_indices.front(), count = static_cast<int64_t>(selection.token_indices.size());
      expect_logits(clamp_low_res_logits(out.masks.rows(first, count)), c.at(key + ".low_res_masks"));
      expect_scores(out.iou.rows(first, count), c.at(key + ".iou_predictions"));
    }
    // The CPU fast path on the same prompt (it takes those without a mask input).
    if (g.prompt.mask_input.empty()) {
      const MaskDecoderOutput fast = cpu.predict_masks(image, sparse, 1);
      expect_logits(out.masks, fast.masks);
      expect_scores(out.iou, fast.iou);
      expect_scores(scalar(out.object_score_logit), scalar(fast.object_score_logit));
    }
  }
  return worst;
}

// The sparse embeddings of `count` micro prompts of one token count (three:
// two points and the padding point, or a box's corners and the padding point),
// points and boxes in turn over the image.
inline std::vector<Tensor> micro_batch_sparse(int count) {
  const DecoderCase& c = micro_decoder_case();
  const PromptEncoder prompt_encoder(c.config, c.weights);
  std::vector<Tensor> sparse;
  for (int i = 0; i < count; ++i) {
    const float x = static_cast<float>(c.orig_w) * (0.1f + 0.8f * static_cast<float>(i) / static_cast<float>(count));
    const float y = static_cast<float>(c.orig_h) * (0.9f - 0.7f * static_cast<float>(i) / static_cast<float>(count));
    Prompt prompt;
    if (i % 2 == 0) {
      prompt.points = {{x, y, 1}, {0.5f * x, 0.5f * y, 0}};
    } else {
      prompt.box = std::array<float, 4>{x * 0.5f, y * 0.5f, x, y};
    }
    sparse.push_back(prompt_encoder.embed_sparse(prompt, c.orig_w, c.orig_h));
  }
  return sparse;
}

// `count` mask inputs for micro prompts ([1, L, L] logits in [-8, 8)).
inline std::vector<Tensor> micro_batch_mask_inputs(int count) {
  const int64_t l = micro_decoder_case().config.low_res_mask_size();
  std::vector<Tensor> masks;
  for (int i = 0; i < count; ++i) masks.push_back(random_tensor({1, l, l}, 200 + static_cast<uint32_t>(i), 8.0f));
  return masks;
}

// How far predict_masks_batch's results lie from each prompt decoded alone:
// the largest absolute differences of the logits and of the scores (IoUs,
// object score), and whether every bit is equal.
struct BatchDifference {
  double logit = 0, score = 0;
  bool bit_for_bit = true;
};

inline BatchDifference batch_against_each_alone(const MaskDecoder& decoder,
                                                const DeviceDecoderFeatures& features,
                                                const std::vector<MaskDecoderOutput>& batched,
                                                const std::vector<Tensor>& sparse,
                                                const std::vector<Tensor>& mask_inputs = {}) {
  BatchDifference difference;
  EXPECT_EQ(batched.size(), sparse.size());
  auto same_bits = [](const Tensor& a, const Tensor& b) {
    return a.shape() == b.shape() &&
           std::memcmp(a.data(), b.data(), sizeof(float) * static_cast<size_t>(a.numel())) == 0;
  };
  for (size_t i = 0; i < std::min(batched.size(), sparse.size()); ++i) {
    const MaskDecoderOutput alone = decoder.predict_masks(features, sparse[i], mask_inputs.empty() ? Tensor() : mask_inputs[i]);
    const Tensor batched_score = vector_tensor({batched[i].object_score_logit});
    const Tensor alone_score = vector_tensor({alone.object_score_logit});
    difference.logit = std::max(difference.logit, max_abs_error(batched[i].masks, alone.masks));
    difference.score = std::max({difference.score, max_abs_error(batched[i].iou, alone.iou),
                                 max_abs_error(batched_score, alone_score)});
    difference.bit_for_bit = difference.bit_for_bit && same_bits(batched[i].masks, alone.masks) &&
                             same_bits(batched[i].iou, alone.iou) && same_bits(batched_score, alone_score);
  }
  return difference;
}

}  // namespace sam2rt::testing
