// The image encoder on the Vulkan backend (lavapipe in CI), fp32, against the
// goldens at the CPU's tolerances, with the validation layers on: recorded on
// the first encode, replayed on new images after.
#ifdef SAM2RT_VULKAN

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <string>

#include "backends/vulkan/vulkan_backend.h"
#include "core/error.h"
#include "encoder_goldens.h"
#include "kernels/layout.h"
#include "model/synthetic_weights.h"
#include "random_tensor.h"
#include "vulkan_test_context.h"

namespace sam2rt::testing {
namespace {

using VulkanEncoderMicro = VulkanBackendTest;
using VulkanEncoderTiny = VulkanBackendTest;

TEST_F(VulkanEncoderMicro, MatchesOfficialGoldens) {
  const ModelConfig config = micro_config();
  const ImageEncoder encoder(config, synthetic_weights(config, 0), backend());
  expect_micro_goldens(encoder);  // recorded, then run
  expect_micro_goldens(encoder);  // replayed
}

// The kernels a GPU gets (tiled through shared memory), forced on this device.
TEST_F(VulkanEncoderMicro, MatchesOfficialGoldensWithTheTiledKernels) {
  const ModelConfig config = micro_config();
  expect_micro_goldens(ImageEncoder(config, synthetic_weights(config, 0), backend(0, true)));
}

TEST_F(VulkanEncoderMicro, ReplaysOnNewImagesAsTheCpuComputesThem) {
  const ModelConfig config = micro_config();
  const WeightMap weights = synthetic_weights(config, 0);
  const ImageEncoder cpu(config, weights);
  const ImageEncoder device(config, weights, backend());
  const Tensor first = random_tensor({1, 3, config.image_size, config.image_size}, 21);
  const Tensor second = random_tensor({1, 3, config.image_size, config.image_size}, 22);
  const EncoderOutputs first_on_device = device.encode(first);
  for (const Tensor* image : {&second, &first}) {
    // The device downloads the neck's levels with the rest: the CPU makes them too.
    const EncoderOutputs expected = cpu.encode(*image, {.neck_levels = true});
    const EncoderOutputs actual = device.encode(*image);
    for (const auto& [name, pair] : {std::pair{"image_embed", std::pair{&actual.decoder.image_embed, &expected.decoder.image_embed}},
                                     std::pair{"feat_s1", std::pair{&actual.decoder.feat_s1, &expected.decoder.feat_s1}},
                                     std::pair{"feat_s0", std::pair{&actual.decoder.feat_s0, &expected.decoder.feat_s0}}}) {
      ASSERT_EQ(pair.first->shape(), pair.second->shape()) << name;
      const Agreement a = agreement(*pair.first, *pair.second);
      EXPECT_LE(a.one_minus_cos, kMaxOneMinusCos) << name;
      EXPECT_LE(a.max_abs_err, kMaxAbsErr) << name;
    }
    // The same ops in the same order: one backend op per CPU op, all on the device.
    EXPECT_EQ(actual.ops.ops, expected.ops.ops);
    EXPECT_EQ(actual.ops.ops_on_device, actual.ops.ops);
    EXPECT_GE(actual.ops.dispatches, actual.ops.ops);
  }
  // A replay of the same image gives the same bits.
  const EncoderOutputs again = device.encode(first);
  for (int64_t i = 0; i < again.decoder.image_embed.numel(); ++i) {
    ASSERT_EQ(again.decoder.image_embed[i], first_on_device.decoder.image_embed[i]) << i;
  }
}

TEST_F(VulkanEncoderMicro, RefusesBf16AndWrongInputs) {
  const ModelConfig config = micro_config();
  const ImageEncoder encoder(config, synthetic_weights(config, 0), backend());
  const Tensor image({1, 3, config.image_size, config.image_size});
  try {
    encoder.encode(image, {.precision = Precision::bf16});
    FAIL() << "bf16 accepted on the device";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("CPU only"), std::string::npos) << e.what();
  }
  EXPECT_THROW(encoder.encode(Tensor({1, 3, 128, 128})), Error);
  EXPECT_NO_THROW(encoder.encode(image));
}

// What a mask decoder on the device reads: the decoder's features left there
// channels-last, each encode's in its own tensors, which later encodes leave alone.
TEST_F(VulkanEncoderMicro, LeavesTheDecoderFeaturesOnTheDeviceWhenAsked) {
  const ModelConfig config = micro_config();
  const auto device = backend();
  const ImageEncoder encoder(config, synthetic_weights(config, 0), device);
  const EncodeOptions keep{.decoder_features_on_device = true, .download_outputs = true};
  const EncoderOutputs first = encoder.encode(random_tensor({1, 3, config.image_size, config.image_size}, 41), keep);
  const EncoderOutputs second = encoder.encode(random_tensor({1, 3, config.image_size, config.image_size}, 42), keep);
  EXPECT_TRUE(encoder.encode(random_tensor({1, 3, config.image_size, config.image_size}, 43))
                  .decoder_on_device.image_embed.empty());
  for (const EncoderOutputs* out : {&first, &second}) {
    for (const auto& [name, pair] :
         {std::pair{"image_embed", std::pair{&out->decoder_on_device.image_embed, &out->decoder.image_embed}},
          std::pair{"feat_s1", std::pair{&out->decoder_on_device.feat_s1, &out->decoder.feat_s1}},
          std::pair{"feat_s0", std::pair{&out->decoder_on_device.feat_s0, &out->decoder.feat_s0}}}) {
      const Tensor expected = nchw_to_hwc(*pair.second);
      const Tensor kept = device->download(*pair.first);
      ASSERT_EQ(kept.shape(), expected.shape()) << name;
      for (int64_t i = 0; i < kept.numel(); ++i) ASSERT_EQ(kept[i], expected[i]) << name << " at " << i;
    }
  }
}

// The video tracker's encode on a device: the coarsest neck level alone is
// made and downloaded (two downloads fewer than with every level), with the
// bits it has among all three.
TEST_F(VulkanEncoderMicro, DownloadsTheCoarsestNeckLevelAloneWhenThatIsAllThatIsAsked) {
  const ModelConfig config = micro_config();
  const auto device = backend();
  const ImageEncoder encoder(config, synthetic_weights(config, 0), device);
  const Tensor image = random_tensor({1, 3, config.image_size, config.image_size}, 52);
  const EncoderOutputs all = encoder.encode(image, {.neck_levels = true});
  for (int replay = 0; replay < 2; ++replay) {  // recorded, then replayed
    const TransferCounts before = device->transfers();
    const EncoderOutputs coarsest = encoder.encode(image, {.neck_levels = true, .coarsest_neck_level_only = true});
    EXPECT_EQ(device->transfers().downloads - before.downloads, 4);  // level 2 and the decoder's three
    ASSERT_EQ(coarsest.neck_levels.size(), 3u);
    EXPECT_TRUE(coarsest.neck_levels[0].empty() && coarsest.neck_levels[1].empty());
    ASSERT_EQ(coarsest.neck_levels[2].shape(), all.neck_levels[2].shape());
    EXPECT_EQ(std::memcmp(coarsest.neck_levels[2].data(), all.neck_levels[2].data(),
                          sizeof(float) * all.neck_levels[2].numel()),
              0);
    expect_same_bits(coarsest.decoder, all.decoder);
  }
}

// Features left on the device are not downloaded unless asked: the encode
// uploads the image and downloads nothing; download_decoder_features later
// gives the bits the encode would have downloaded.
TEST_F(VulkanEncoderMicro, DownloadsNothingWhenTheFeaturesStayOnTheDevice) {
  const ModelConfig config = micro_config();
  const auto device = backend();
  const ImageEncoder encoder(config, synthetic_weights(config, 0), device);
  const Tensor image = random_tensor({1, 3, config.image_size, config.image_size}, 51);
  const EncoderOutputs downloaded = encoder.encode(image);
  for (int replay = 0; replay < 2; ++replay) {  // recorded, then replayed
    const TransferCounts before = device->transfers();
    const EncoderOutputs resident = encoder.encode(image, {.decoder_features_on_device = true});
    const TransferCounts after = device->transfers();
    EXPECT_EQ(after.uploads - before.uploads, 1);
    EXPECT_EQ(after.downloads - before.downloads, 0);
    EXPECT_TRUE(resident.decoder.image_embed.empty() && resident.decoder.feat_s1.empty() &&
                resident.decoder.feat_s0.empty());
    EXPECT_TRUE(resident.neck_levels.empty());
    EXPECT_EQ(resident.download_ms, 0.0);
    // The same encode without its six NCHW conversions.
    EXPECT_LT(resident.ops.ops, downloaded.ops.ops);
    EXPECT_EQ(resident.ops.ops_on_device, resident.ops.ops);

    const DecoderFeatures later = encoder.download_decoder_features(resident.decoder_on_device);
    EXPECT_EQ(device->transfers().downloads - after.downloads, 3);
    expect_same_bits(later, downloaded.decoder);
  }
  // Asked for, they come as before.
  const EncoderOutputs asked = encoder.encode(image, {.decoder_features_on_device = true, .download_outputs = true});
  EXPECT_EQ(asked.neck_levels.size(), downloaded.neck_levels.size());
  EXPECT_EQ(std::memcmp(asked.decoder.feat_s0.data(), downloaded.decoder.feat_s0.data(),
                        sizeof(float) * downloaded.decoder.feat_s0.numel()),
            0);
  EXPECT_THROW(encoder.download_decoder_features({}), Error);
}

TEST_F(VulkanEncoderMicro, AnOpThatCannotBeRecordedFailsEveryEncodeAlike) {
  // Bindings capped below the image (the patch embed binds it whole): the recording stops with an
  // Error, is dropped, and the next encode records afresh (and stops the same way).
  const ModelConfig config = micro_config();
  const ImageEncoder encoder(config, synthetic_weights(config, 0), backend(4096));
  const Tensor image({1, 3, config.image_size, config.image_size});
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      encoder.encode(image);
      FAIL() << "recorded with 4096-byte bindings";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).find("already"), std::string::npos) << e.what();
    }
  }
}

// The Tiny architecture (widths, heads, windows, global blocks) at image size
// 256, every output against the CPU's: what the golden case covers at 1024,
// at a sixteenth of the work.
TEST_F(VulkanEncoderTiny, AtImageSize256MatchesTheCpu) {
  ModelConfig config = preset_config("tiny");
  config.image_size = 256;
  const WeightMap weights = synthetic_weights(config, 0);
  const Tensor image = random_tensor({1, 3, 256, 256}, 31);
  const EncoderOutputs expected =
      ImageEncoder(config, weights).encode(image, {.neck_levels = true, .trunk_outputs = true});
  const EncoderOutputs actual =
      ImageEncoder(config, weights, backend()).encode(image, {.neck_levels = true, .trunk_outputs = true});
  const std::map<std::string, Tensor> expected_named = by_golden_key(expected), actual_named = by_golden_key(actual);
  ASSERT_EQ(actual_named.size(), 11u);
  for (const auto& [key, tensor] : actual_named) expect_matches_golden(key, tensor, expected_named.at(key));
}

TEST_F(VulkanEncoderTiny, MatchesOfficialGoldens) {
  const ModelConfig config = preset_config("tiny");
  expect_tiny_goldens(ImageEncoder(config, synthetic_weights(config, 0), backend()), config.image_size);
}

}  // namespace
}  // namespace sam2rt::testing

#endif
