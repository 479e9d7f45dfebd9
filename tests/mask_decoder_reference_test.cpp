// The reference mask decoder, written against Backend (model/mask_decoder.h),
// on the CPU backend: every micro golden prompt (a mask input among them)
// against the official goldens at the decoder's tolerances and against the CPU
// fast path (LowRankMaskDecoder), multimask and single mask. vulkan_mask_decoder_test.cpp runs
// the same on the Vulkan backend.
#include "model/mask_decoder.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <vector>

#include "backends/cpu_backend.h"
#include "core/error.h"
#include "reference_decoder_goldens.h"

namespace sam2rt::testing {
namespace {

TEST(ReferenceDecoderMicro, OnTheCpuBackendMatchesGoldens) {
  const auto backend = std::make_shared<CpuBackend>();
  const auto decoder = micro_decoder(backend);
  EXPECT_EQ(expect_micro_goldens(*decoder, upload_decoder_features(*backend, micro_decoder_case().features)).runs, 10);
  EXPECT_GT(decoder->last_ops().ops, 0);
}

// A batch on the CPU backend: each prompt as decoded alone within the decoder
// goldens' tolerances (not bit for bit: the CPU's GEMMs may block a batch's
// rows differently), without and with mask inputs; prompts of different token
// counts are refused, and mask inputs that are not one per prompt of [1, L, L].
TEST(ReferenceDecoderMicro, ABatchOnTheCpuBackendIsEachPromptAlone) {
  const auto backend = std::make_shared<CpuBackend>();
  const auto decoder = micro_decoder(backend);
  const DeviceDecoderFeatures features = upload_decoder_features(*backend, micro_decoder_case().features);
  EXPECT_EQ(decoder->max_prompts_per_batch(), MaskDecoder::kMaxPromptsPerBatch);
  const std::vector<Tensor> sparse = micro_batch_sparse(5);
  const BatchDifference difference =
      batch_against_each_alone(*decoder, features, decoder->predict_masks_batch(features, sparse), sparse);
  EXPECT_LE(difference.logit, kDeviceDecoderLogitTolerance);
  EXPECT_LE(difference.score, kDeviceDecoderScoreTolerance);
  std::printf("  cpu backend: batch against alone: logits %.3g, scores %.3g, bit for bit %d\n", difference.logit,
              difference.score, difference.bit_for_bit ? 1 : 0);
  // With mask inputs (their downscaling in the batch too).
  const std::vector<Tensor> masks = micro_batch_mask_inputs(5);
  const BatchDifference with_masks = batch_against_each_alone(
      *decoder, features, decoder->predict_masks_batch(features, sparse, masks), sparse, masks);
  EXPECT_LE(with_masks.logit, kDeviceDecoderLogitTolerance);
  EXPECT_LE(with_masks.score, kDeviceDecoderScoreTolerance);
  std::printf("  cpu backend: batch with mask inputs against alone: logits %.3g, scores %.3g, bit for bit %d\n",
              with_masks.logit, with_masks.score, with_masks.bit_for_bit ? 1 : 0);
  const Tensor four_tokens({1, 4, micro_decoder_case().config.embed_dim()});
  EXPECT_THROW(decoder->predict_masks_batch(features, {sparse.front(), four_tokens}), Error);
  EXPECT_TRUE(decoder->predict_masks_batch(features, {}).empty());
  // A mask input per prompt or none; each of the low-res mask's shape.
  EXPECT_THROW(decoder->predict_masks_batch(features, sparse, {masks.front()}), Error);
  EXPECT_THROW(decoder->predict_masks_batch(features, {sparse.front()}, {masks.front().reshaped({masks.front().numel()})}), Error);
}

TEST(ReferenceDecoderMicro, RefusesFeaturesOfAnotherShape) {
  const auto backend = std::make_shared<CpuBackend>();
  const auto decoder = micro_decoder(backend);
  const DecoderCase& c = micro_decoder_case();
  DeviceDecoderFeatures features = upload_decoder_features(*backend, c.features);
  features.feat_s0 = features.feat_s1;
  EXPECT_THROW(decoder->predict_masks(features, Tensor({1, 0, c.config.embed_dim()})), Error);
}

}  // namespace
}  // namespace sam2rt::testing
