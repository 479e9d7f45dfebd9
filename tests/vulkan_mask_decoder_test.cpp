// The mask decoder written against Backend (model/device_mask_decoder.h) on the
// Vulkan backend (lavapipe in CI), fp32, validation layers on: every micro
// golden prompt without mask input against the official goldens at the
// decoder's tolerances and against the CPU decoder, recorded then replayed.
#ifdef SAM2RT_VULKAN

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "backends/vulkan/vulkan_backend.h"
#include "device_mask_decoder_goldens.h"
#include "vulkan_test_context.h"

namespace sam2rt::testing {
namespace {

class VulkanMaskDecoderMicro : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const std::string& message : log_->messages()) ADD_FAILURE() << message;
  }
  // A backend with the validation layers reporting into this test.
  std::shared_ptr<VulkanBackend> backend(bool tiled_kernels = false) {
    VulkanContextOptions options;
    options.force_tiled_kernels = tiled_kernels;
    options.validation = kValidationLayers;
    options.validation_log = log_;
    return std::make_shared<VulkanBackend>(options);
  }

 private:
  std::shared_ptr<ValidationLog> log_ = std::make_shared<ValidationLog>();
};

TEST_F(VulkanMaskDecoderMicro, MatchesGoldensRecordedAndReplayed) {
  const auto device = backend();
  const auto decoder = micro_decoder(device);
  const DeviceDecoderFeatures features = upload_decoder_features(*device, micro_decoder_case().features);
  EXPECT_EQ(expect_micro_goldens(*decoder, features), 8);  // records a program per token count
  EXPECT_EQ(expect_micro_goldens(*decoder, features), 8);  // replays them
  const ProgramStats ops = decoder->last_ops();
  EXPECT_GT(ops.ops, 0);
  EXPECT_EQ(ops.ops_on_device, ops.ops);
  EXPECT_GE(ops.dispatches, ops.ops);
}

// The kernels a GPU gets (tiled through shared memory), forced on this device.
TEST_F(VulkanMaskDecoderMicro, MatchesGoldensWithTheTiledKernels) {
  const auto device = backend(true);
  const auto decoder = micro_decoder(device);
  EXPECT_EQ(expect_micro_goldens(*decoder, upload_decoder_features(*device, micro_decoder_case().features)), 8);
}
}  // namespace
}  // namespace sam2rt::testing

#endif
