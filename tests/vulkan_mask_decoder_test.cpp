// The mask decoder written against Backend (model/mask_decoder.h) on the
// Vulkan backend (lavapipe in CI), fp32, validation layers on: every micro
// golden prompt (a mask input among them) against the official goldens at the
// decoder's tolerances and against the CPU decoder, recorded then replayed;
// Tiny's golden runs through SamHeads on the device.
#ifdef SAM2RT_VULKAN

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "backends/vulkan/vulkan_backend.h"
#include "reference_decoder_goldens.h"
#include "model/prompt_encoder.h"
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
  EXPECT_EQ(expect_micro_goldens(*decoder, features).runs, 10);  // records a program per token count
  EXPECT_EQ(expect_micro_goldens(*decoder, features).runs, 10);  // replays them
  const ProgramStats ops = decoder->last_ops();
  EXPECT_GT(ops.ops, 0);
  EXPECT_EQ(ops.ops_on_device, ops.ops);
  EXPECT_GE(ops.dispatches, ops.ops);
}

// The kernels a GPU gets (tiled through shared memory), forced on this device.
TEST_F(VulkanMaskDecoderMicro, MatchesGoldensWithTheTiledKernels) {
  const auto device = backend(0, true);
  const auto decoder = micro_decoder(device);
  EXPECT_EQ(expect_micro_goldens(*decoder, upload_decoder_features(*device, micro_decoder_case().features)).runs, 10);
}
// SamHeads on the device (as Sam2Model makes them for --device vulkan): every
// micro golden run, the mask-input prompt included, through the prompt
// encoder, the device decoder, the selection and the upscaling to the image;
// no features come down (one download per run: its outputs).
TEST_F(VulkanMaskDecoderMicro, SamHeadsOnTheDeviceMeetEveryGolden) {
  const DecoderCase& c = micro_decoder_case();
  const auto device = backend();
  const SamHeads heads(c.config, c.weights, device);
  ASSERT_TRUE(heads.decodes_on_device());
  const TransferCounts before = device->transfers();
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
  EXPECT_EQ(device->transfers().downloads - before.downloads, runs);
  EXPECT_GT(heads.device_decoder_ops().ops_on_device, 0);
}

// Prompts with a mask input on an image whose features are on the device
// only: one upload (its tokens and its mask input; the device downscales it)
// and one download (its outputs), within the decoder's tolerances of the
// CPU's. In a batch with prompts without one (predict_batch, and
// predict_batch_low_res, what everything --use-m2m refines with): a program
// per token count and mask input or not, each prompt as decoded alone, bit for bit.
TEST_F(VulkanMaskDecoderMicro, SamHeadsDecodeMaskInputsOnTheDeviceInBatches) {
  const DecoderCase& c = micro_decoder_case();
  const auto device = backend();
  const SamHeads heads(c.config, c.weights, device), cpu(c.config, c.weights);
  const HeadsImage image = heads.prepare_image(upload_decoder_features(*device, c.features));
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
  TransferCounts before = device->transfers();
  const MaskPrediction alone = heads.predict(image, *with_mask, true, c.orig_w, c.orig_h);
  EXPECT_EQ(device->transfers().uploads - before.uploads, 1);
  EXPECT_EQ(device->transfers().downloads - before.downloads, 1);
  const MaskPrediction expected = cpu.predict(c.features, *with_mask, true, c.orig_w, c.orig_h);
  EXPECT_LE(max_abs_error(alone.low_res_masks, expected.low_res_masks), kDeviceDecoderLogitTolerance);
  EXPECT_LE(max_abs_error(vector_tensor(alone.all_iou), vector_tensor(expected.all_iou)), kDeviceDecoderScoreTolerance);

  // The golden mask input with another point, and another mask input with the golden point.
  Prompt moved = *with_mask, remasked = *with_mask;
  moved.points.front().x = 0.5f * static_cast<float>(c.orig_w);
  remasked.mask_input = micro_batch_mask_inputs(1).front();
  const std::vector<Prompt> batch = {*with_mask, without_mask.front(), moved, remasked, without_mask.back()};
  const PromptEncoder prompt_encoder(c.config, c.weights);
  std::set<std::pair<int64_t, bool>> programs;
  for (const Prompt& p : batch) {
    programs.insert({prompt_encoder.embed_sparse(p, c.orig_w, c.orig_h).dim(1), !p.mask_input.empty()});
  }
  for (const bool low_res : {false, true}) {
    SCOPED_TRACE(low_res ? "predict_batch_low_res" : "predict_batch");
    before = device->transfers();
    const std::vector<MaskPrediction> decoded =
        low_res ? heads.predict_batch_low_res(image, batch, true, c.orig_w, c.orig_h)
                : heads.predict_batch(image, batch, true, c.orig_w, c.orig_h);
    const TransferCounts after = device->transfers();
    EXPECT_EQ(after.submissions - before.submissions, static_cast<int64_t>(programs.size()));
    EXPECT_EQ(after.uploads - before.uploads, static_cast<int64_t>(programs.size()));
    EXPECT_EQ(after.downloads - before.downloads, static_cast<int64_t>(programs.size()));
    ASSERT_EQ(decoded.size(), batch.size());
    for (size_t i = 0; i < batch.size(); ++i) {
      SCOPED_TRACE("prompt " + std::to_string(i));
      const MaskPrediction one = heads.predict(image, batch[i], true, c.orig_w, c.orig_h);
      ASSERT_EQ(decoded[i].all_low_res_logits.shape(), one.all_low_res_logits.shape());
      EXPECT_EQ(std::memcmp(decoded[i].all_low_res_logits.data(), one.all_low_res_logits.data(),
                            sizeof(float) * one.all_low_res_logits.numel()),
                0);
      EXPECT_EQ(decoded[i].all_iou, one.all_iou);
      EXPECT_EQ(decoded[i].object_score_logit, one.object_score_logit);
    }
  }
}

// predict_masks_batch of `sparse` (with `mask_inputs`) runs as `programs` programs, each one
// submission, one upload and one download, and each prompt's outputs are its
// own decode's bit for bit. Each program has as many dispatches as the
// one-prompt program (every op over the batch is one dispatch; micro's
// attentions have too few keys to go through the scores, which lavapipe runs
// batch by batch).
void expect_batch_in_programs(const Backend& device, const MaskDecoder& decoder,
                              const DeviceDecoderFeatures& features, const std::vector<Tensor>& sparse,
                              int64_t programs, const std::vector<Tensor>& mask_inputs = {}) {
  const TransferCounts before = device.transfers();
  const std::vector<MaskDecoderOutput> batched = decoder.predict_masks_batch(features, sparse, mask_inputs);
  const TransferCounts after = device.transfers();
  const int64_t batch_dispatches = decoder.last_ops().dispatches;
  EXPECT_EQ(after.submissions - before.submissions, programs);
  EXPECT_EQ(after.uploads - before.uploads, programs);
  EXPECT_EQ(after.downloads - before.downloads, programs);
  EXPECT_TRUE(batch_against_each_alone(decoder, features, batched, sparse, mask_inputs).bit_for_bit);
  EXPECT_EQ(batch_dispatches, decoder.last_ops().dispatches);  // the last prompt's, alone
}

// Five prompts of one token count (point pairs and boxes) in one program: one
// submission, one upload (their tokens) and one download (their outputs);
// each prompt's outputs are its own decode's bit for bit (the same ops per
// row), with the kernels of this device and with the tiled ones GPUs get. The
// same prompts each with a mask input too: still one program, whose one
// upload carries every prompt's tokens and mask input (the device downscales it).
TEST_F(VulkanMaskDecoderMicro, ABatchIsOneSubmissionAndEachPromptAloneBitForBit) {
  for (const bool tiled : {false, true}) {
    SCOPED_TRACE(tiled ? "tiled kernels" : "this device's kernels");
    const auto device = backend(0, tiled);
    const auto decoder = micro_decoder(device);
    const DeviceDecoderFeatures features = upload_decoder_features(*device, micro_decoder_case().features);
    ASSERT_GE(decoder->max_prompts_per_batch(), 5);
    const std::vector<Tensor> sparse = micro_batch_sparse(5);
    decoder->predict_masks(features, sparse.front());  // copies the features into the decoder's tensors
    for (const std::vector<Tensor>& mask_inputs : {std::vector<Tensor>{}, micro_batch_mask_inputs(5)}) {
      SCOPED_TRACE(mask_inputs.empty() ? "without mask inputs" : "with mask inputs");
      for (int replay = 0; replay < 2; ++replay) {  // recorded, then replayed
        expect_batch_in_programs(*device, *decoder, features, sparse, 1, mask_inputs);
      }
    }
  }
}

// A batch larger than the program's cap (bindings capped to 70000 floats, of
// which micro's largest tensor per prompt, its packed outputs of 16389 values,
// fits 4 times; its largest weight, 65536 values, still fits) is split into
// near-equal batches (3 and 2 prompts, a program each), each one submission,
// upload and download; every prompt is still its own decode.
TEST_F(VulkanMaskDecoderMicro, ABatchAboveTheCapIsSplitAndEachPromptAloneBitForBit) {
  const auto device = backend(4 * 70000 + 256);
  const auto decoder = micro_decoder(device);
  ASSERT_EQ(decoder->max_prompts_per_batch(), 4);
  const DeviceDecoderFeatures features = upload_decoder_features(*device, micro_decoder_case().features);
  const std::vector<Tensor> sparse = micro_batch_sparse(5);
  decoder->predict_masks(features, sparse.front());  // copies the features into the decoder's tensors
  expect_batch_in_programs(*device, *decoder, features, sparse, 2);
}

// SamHeads on the device: predict_batch and predict_batch_low_res (what
// everything uses) decode the golden prompts without mask input, twice over,
// in one batch per token count, each prediction the one predict() makes bit
// for bit.
TEST_F(VulkanMaskDecoderMicro, SamHeadsBatchPromptsOfEachTokenCountOnTheDevice) {
  const DecoderCase& c = micro_decoder_case();
  const auto device = backend();
  const SamHeads heads(c.config, c.weights, device);
  const HeadsImage image = heads.prepare_image(upload_decoder_features(*device, c.features));
  std::vector<Prompt> prompts;
  for (const GoldenPrompt& g : c.prompts) {
    if (g.prompt.mask_input.empty()) prompts.push_back(g.prompt);
  }
  ASSERT_EQ(prompts.size(), 4u);
  const std::vector<Prompt> goldens = prompts;
  prompts.insert(prompts.end(), goldens.begin(), goldens.end());
  const PromptEncoder prompt_encoder(c.config, c.weights);
  std::set<int64_t> token_counts;
  for (const Prompt& p : prompts) token_counts.insert(prompt_encoder.embed_sparse(p, c.orig_w, c.orig_h).dim(1));
  ASSERT_GE(token_counts.size(), 2u);
  const auto batches = static_cast<int64_t>(token_counts.size());
  heads.predict(image, prompts.front(), true, c.orig_w, c.orig_h);  // copies the features into the decoder's tensors
  auto same_bits = [](const Tensor& a, const Tensor& b) {
    return a.shape() == b.shape() &&
           std::memcmp(a.data(), b.data(), sizeof(float) * static_cast<size_t>(a.numel())) == 0;
  };
  for (const bool low_res : {false, true}) {
    SCOPED_TRACE(low_res ? "predict_batch_low_res" : "predict_batch");
    const TransferCounts before = device->transfers();
    const std::vector<MaskPrediction> batched =
        low_res ? heads.predict_batch_low_res(image, prompts, true, c.orig_w, c.orig_h)
                : heads.predict_batch(image, prompts, true, c.orig_w, c.orig_h);
    const TransferCounts after = device->transfers();
    EXPECT_EQ(after.submissions - before.submissions, batches);
    EXPECT_EQ(after.uploads - before.uploads, batches);
    EXPECT_EQ(after.downloads - before.downloads, batches);
    ASSERT_EQ(batched.size(), prompts.size());
    for (size_t i = 0; i < prompts.size(); ++i) {
      SCOPED_TRACE("prompt " + std::to_string(i));
      const MaskPrediction one = heads.predict(image, prompts[i], true, c.orig_w, c.orig_h);
      EXPECT_TRUE(same_bits(batched[i].all_low_res_logits, one.all_low_res_logits));
      EXPECT_EQ(batched[i].all_iou, one.all_iou);
      EXPECT_EQ(batched[i].object_score_logit, one.object_score_logit);
      EXPECT_EQ(batched[i].token_indices, one.token_indices);
      if (!low_res) {
        EXPECT_TRUE(same_bits(batched[i].masks, one.masks));
      }
    }
  }
}

using VulkanMaskDecoderTiny = VulkanBackendTest;

// Tiny (synthetic weights, salt 0) through SamHeads on the device at the CPU
// decoder's tolerances: every golden run (a point, two points, a box, a box
// and a point, a point with a mask input, each multimask and single mask: the
// selection's both branches). lavapipe takes seconds per Tiny decode.
TEST_F(VulkanMaskDecoderTiny, SamHeadsOnTheDeviceMeetTheGoldens) {
  const DecoderCase& c = tiny_decoder_case();
  const SamHeads heads(c.config, c.weights, backend());
  ASSERT_TRUE(heads.decodes_on_device());
  const auto start = std::chrono::steady_clock::now();
  const int runs = expect_golden_runs_match(c, heads, {kDeviceDecoderLogitTolerance, kDeviceDecoderScoreTolerance},
                                            [&](const GoldenRun& r, const MaskPrediction& pred) {
                                              expect_tiny_run_matches(c, r, pred, kDeviceDecoderLogitTolerance);
                                            });
  std::printf("  tiny: %d golden runs on the device in %.1f s\n", runs,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  EXPECT_EQ(runs, 10);
  const ProgramStats ops = heads.device_decoder_ops();
  EXPECT_GT(ops.ops, 0);
  EXPECT_EQ(ops.ops_on_device, ops.ops);
}

}  // namespace
}  // namespace sam2rt::testing

#endif
