// The mask decoder written against Backend (model/device_mask_decoder.h) on the
// Vulkan backend (lavapipe in CI), fp32, validation layers on: every micro
// golden prompt without mask input against the official goldens at the
// decoder's tolerances and against the CPU decoder, recorded then replayed;
// Tiny's golden runs through SamHeads on the device.
#ifdef SAM2RT_VULKAN

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backends/vulkan/vulkan_backend.h"
#include "device_mask_decoder_goldens.h"
#include "model/sam_heads.h"
#include "tiny_decoder_case.h"
#include "vulkan_test_context.h"

namespace sam2rt::testing {
namespace {

using VulkanMaskDecoderMicro = VulkanBackendTest;

TEST_F(VulkanMaskDecoderMicro, MatchesGoldensRecordedAndReplayed) {
  const auto device = backend();
  const auto decoder = micro_decoder(device);
  const DeviceDecoderFeatures features = upload_decoder_features(*device, micro_decoder_case().features);
  EXPECT_EQ(expect_micro_goldens(*decoder, features).runs, 8);  // records a program per token count
  EXPECT_EQ(expect_micro_goldens(*decoder, features).runs, 8);  // replays them
  const ProgramStats ops = decoder->last_ops();
  EXPECT_GT(ops.ops, 0);
  EXPECT_EQ(ops.ops_on_device, ops.ops);
  EXPECT_GE(ops.dispatches, ops.ops);
}

// The kernels a GPU gets (tiled through shared memory), forced on this device.
TEST_F(VulkanMaskDecoderMicro, MatchesGoldensWithTheTiledKernels) {
  const auto device = backend(0, true);
  const auto decoder = micro_decoder(device);
  EXPECT_EQ(expect_micro_goldens(*decoder, upload_decoder_features(*device, micro_decoder_case().features)).runs, 8);
}
// SamHeads on the device (as Sam2Model makes them for --device vulkan): every
// micro golden run, through the prompt encoder, the device decoder (the mask
// input prompt: the CPU's), the selection and the upscaling to the image.
TEST_F(VulkanMaskDecoderMicro, SamHeadsOnTheDeviceMeetEveryGolden) {
  const DecoderCase& c = micro_decoder_case();
  const SamHeads heads(c.config, c.weights, backend());
  ASSERT_TRUE(heads.decodes_on_device());
  const int runs = expect_golden_runs_match(
      c, heads, {kDeviceDecoderLogitTolerance, kDeviceDecoderScoreTolerance},
      [&](const GoldenRun& r, const MaskPrediction& pred) {
        EXPECT_LE(max_abs_error(pred.all_low_res_logits, c.at(r.prompt.name + ".all_low_res_logits")),
                  kDeviceDecoderLogitTolerance);
        EXPECT_LE(max_abs_error(pred.low_res_masks, c.at(r.key_prefix + ".low_res_masks")),
                  kDeviceDecoderLogitTolerance);
        const Tensor& want_masks = c.at(r.key_prefix + ".masks");
        EXPECT_LE(max_abs_error(pred.masks, want_masks), kDeviceDecoderLogitTolerance);
        // Exempt where the golden logit itself is within the tolerance of 0.
        expect_thresholded_masks_match(pred.masks, micro_dir() + "/masks/" + r.key_prefix + ".png", [&](int64_t i) {
          return std::fabs(want_masks[i]) > kDeviceDecoderLogitTolerance;
        });
      });
  EXPECT_EQ(runs, 10);
  EXPECT_GT(heads.device_decoder_ops().ops_on_device, 0);
}

// With the decoder on the device, an image needs the CPU decoder's state (and
// so its host features) only for a prompt with a mask input: made then, once.
TEST_F(VulkanMaskDecoderMicro, SamHeadsMakeTheCpuStateOnlyForAMaskInput) {
  const DecoderCase& c = micro_decoder_case();
  const auto device = backend();
  const SamHeads heads(c.config, c.weights, device);
  int fetched = 0;
  const HeadsImage image = heads.prepare_image(upload_decoder_features(*device, c.features), [&] {
    ++fetched;
    return c.features;
  });
  std::vector<Prompt> without_mask;
  const Prompt* with_mask = nullptr;
  for (const GoldenPrompt& g : c.prompts) {
    if (g.prompt.mask_input.empty()) {
      without_mask.push_back(g.prompt);
    } else {
      with_mask = &g.prompt;
    }
  }
  ASSERT_NE(with_mask, nullptr);
  heads.predict(image, without_mask.front(), true, c.orig_w, c.orig_h);
  heads.predict_batch(image, without_mask, false, c.orig_w, c.orig_h);
  heads.predict_batch_low_res(image, without_mask, true, c.orig_w, c.orig_h, 0.5f);
  EXPECT_EQ(fetched, 0);
  const MaskPrediction first = heads.predict(image, *with_mask, true, c.orig_w, c.orig_h);
  EXPECT_EQ(fetched, 1);
  heads.predict_batch(image, {without_mask.front(), *with_mask}, true, c.orig_w, c.orig_h);
  EXPECT_EQ(fetched, 1);
  // As the CPU state made with the image.
  const MaskPrediction expected = heads.predict(c.features, *with_mask, true, c.orig_w, c.orig_h);
  ASSERT_EQ(first.low_res_masks.shape(), expected.low_res_masks.shape());
  EXPECT_EQ(std::memcmp(first.low_res_masks.data(), expected.low_res_masks.data(),
                        sizeof(float) * expected.low_res_masks.numel()),
            0);
  EXPECT_EQ(first.all_iou, expected.all_iou);

  // A batch with a mask input makes it before its workers start, once.
  int fetched_by_batch = 0;
  const HeadsImage other = heads.prepare_image(upload_decoder_features(*device, c.features), [&] {
    ++fetched_by_batch;
    return c.features;
  });
  heads.predict_batch(other, {*with_mask, without_mask.front(), *with_mask, *with_mask}, true, c.orig_w, c.orig_h);
  EXPECT_EQ(fetched_by_batch, 1);
}

using VulkanMaskDecoderTiny = VulkanBackendTest;

// Tiny (synthetic weights, salt 0) through SamHeads on the device at the CPU
// decoder's tolerances. lavapipe takes seconds per Tiny decode, so a subset of
// the golden runs: a point and a box, each multimask and single mask (the
// selection's both branches).
TEST_F(VulkanMaskDecoderTiny, SamHeadsOnTheDeviceMeetTheGoldens) {
  DecoderCase c = tiny_decoder_case();  // a copy sharing the tensors, to choose prompts
  std::erase_if(c.prompts, [](const GoldenPrompt& g) { return g.name != "p1_point" && g.name != "p3_box"; });
  ASSERT_EQ(c.prompts.size(), 2u);
  const SamHeads heads(c.config, c.weights, backend());
  ASSERT_TRUE(heads.decodes_on_device());
  const auto start = std::chrono::steady_clock::now();
  const int runs = expect_golden_runs_match(c, heads, {kDeviceDecoderLogitTolerance, kDeviceDecoderScoreTolerance},
                                            [&](const GoldenRun& r, const MaskPrediction& pred) {
                                              expect_tiny_run_matches(c, r, pred, kDeviceDecoderLogitTolerance);
                                            });
  std::printf("  tiny: %d golden runs on the device in %.1f s\n", runs,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  EXPECT_EQ(runs, 4);
  const ProgramStats ops = heads.device_decoder_ops();
  EXPECT_GT(ops.ops, 0);
  EXPECT_EQ(ops.ops_on_device, ops.ops);
}

}  // namespace
}  // namespace sam2rt::testing

#endif
