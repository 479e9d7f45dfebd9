// The Vulkan foundation: device description and its one-line errors (in every
// build), and, with SAM2RT_VULKAN, the context, device buffers and the
// command recorder on whatever device 0 is (lavapipe in CI).
#include <gtest/gtest.h>

#include <string>

#include "backends/vulkan/vulkan_device_description.h"
#include "core/error.h"

#ifdef SAM2RT_VULKAN
#include <iostream>
#include <vector>

#include "backends/vulkan/command_recorder.h"
#include "backends/vulkan/embedded_spirv.h"
#include "backends/vulkan/vulkan_ops.h"
#include "kernels/softmax.h"
#include "random_tensor.h"
#include "scoped_environment.h"
#include "vulkan_test_context.h"
#endif

namespace sam2rt {
namespace {

// The one line the CLI will print for --device vulkan where it cannot run.
void expect_no_device_error(int index) {
  try {
    const std::string description = vulkan_device_description(index);
    ADD_FAILURE() << "device " << index << " exists: " << description;
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind("no Vulkan device: ", 0), 0u) << message;
    EXPECT_TRUE(message.ends_with("; use --device cpu")) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

TEST(VulkanDevice, AnIndexBeyondTheDevicesSaysToUseTheCpu) {
  expect_no_device_error(1000);
  expect_no_device_error(-1);
}

#ifdef SAM2RT_VULKAN

TEST(VulkanDevice, DeviceZeroIsDescribed) {
  const std::string description = vulkan_device_description(0);
  EXPECT_NE(description.find("(Vulkan 1."), std::string::npos) << description;
  std::cout << "Vulkan device 0: " << description << "\n";
}

TEST(VulkanDevice, NoDriverSaysToUseTheCpu) {
  // The loader finds no driver: what a machine without a GPU driver looks like.
  const testing::ScopedEnvironment icd("VK_ICD_FILENAMES", "/nonexistent/sam2rt_no_driver.json");
  const testing::ScopedEnvironment drivers("VK_DRIVER_FILES", "/nonexistent/sam2rt_no_driver.json");
  expect_no_device_error(0);
}

#endif

}  // namespace
}  // namespace sam2rt

#ifdef SAM2RT_VULKAN

namespace sam2rt::testing {
namespace {

using VulkanContextTest = VulkanTest;

TEST_F(VulkanContextTest, ReportsTheLimitsTheKernelsNeed) {
  const VulkanLimits& limits = context().limits();
  std::cout << context().device_name() << ": maxStorageBufferRange " << limits.max_storage_buffer_range
            << ", subgroup " << limits.subgroup_size << ", shared memory " << limits.max_compute_shared_memory
            << ", shaderFloat16 " << limits.shader_float16 << "\n";
  EXPECT_FALSE(context().device_name().empty());
  EXPECT_GE(limits.max_storage_buffer_range, 1u << 27);  // the spec's minimum is 2^27 bytes
  EXPECT_GE(limits.max_push_constants_size, 128u);
  EXPECT_GE(limits.max_compute_shared_memory, 16384u);
  EXPECT_GT(limits.subgroup_size, 0u);
  EXPECT_GE(limits.max_workgroup_count[0], 65535u);
  EXPECT_EQ(context().max_binding_bytes(), limits.max_storage_buffer_range);
}

TEST_F(VulkanContextTest, EveryShaderIsEmbedded) {
  for (const char* name : {"matmul", "matmul_tiled", "layer_norm_rows", "softmax_rows", "attention",
                           "attention_tiled", "windowed_attention", "max_pool2x2", "add_upsampled_nearest2x",
                           "hwc_to_nchw", "conv2d_to_hwc", "add_periodic", "attention_narrow",
                           "conv_transpose2x2_to_hwc", "activation"}) {
    for (const std::string& variant : {std::string(name), std::string(name) + "_f16"}) {  // fp32, fp16 storage
      const auto code = embedded_spirv(variant);
      ASSERT_GT(code.size(), 5u) << variant;
      EXPECT_EQ(code[0], 0x07230203u) << variant << " does not start with the SPIR-V magic number";
    }
  }
  EXPECT_THROW(embedded_spirv("no_such_shader"), Error);
}

void expect_round_trip(DeviceBuffer& buffer) {
  const Tensor data = random_tensor({64}, 1);
  buffer.upload(data.data(), 64 * sizeof(float), 16 * sizeof(float));
  std::vector<float> back(64);
  buffer.download(back.data(), 64 * sizeof(float), 16 * sizeof(float));
  for (int i = 0; i < 64; ++i) ASSERT_EQ(back[static_cast<size_t>(i)], data[i]) << i;
  EXPECT_THROW(buffer.upload(data.data(), 64 * sizeof(float), 80 * sizeof(float)), Error);
  EXPECT_THROW(buffer.download(back.data(), 8, buffer.bytes() - 4), Error);
}

TEST_F(VulkanContextTest, BuffersRoundTripMappedOrStaged) {
  {
    DeviceBuffer buffer(context(), 100 * sizeof(float));
    expect_round_trip(buffer);
  }
  VulkanContextOptions staged;
  staged.force_staging = true;
  open_context(staged);
  DeviceBuffer buffer(context(), 100 * sizeof(float));
  EXPECT_FALSE(buffer.mapped());
  expect_round_trip(buffer);
}

TEST_F(VulkanContextTest, ARecordingReplaysOnNewInputs) {
  const VulkanOps ops(context());
  CommandRecorder recorder(context());
  Tensor x = random_tensor({5, 9}, 2, 4.0f);
  DeviceBuffer buffer = upload(x);
  ops.softmax_rows(recorder, all_elements(buffer), 5, 9);
  EXPECT_EQ(recorder.dispatch_count(), 1u);
  for (uint32_t run = 0; run < 3; ++run) {
    x = random_tensor({5, 9}, 10 + run, 4.0f);
    buffer.upload(x.data(), buffer.bytes());
    recorder.submit();
    softmax_rows_reference(x.data(), 5, 9, 9);
    EXPECT_LE(scaled_max_error(download(buffer, {5, 9}), x), 1e-6) << "run " << run;
  }
  EXPECT_THROW(ops.softmax_rows(recorder, all_elements(buffer), 5, 9), Error);  // recording already submitted
  recorder.reset();
  ops.softmax_rows(recorder, all_elements(buffer), 5, 9);
  recorder.submit();
}

TEST_F(VulkanContextTest, StagedBuffersFeedTheKernels) {
  VulkanContextOptions staged;
  staged.force_staging = true;
  open_context(staged);
  const VulkanOps ops(context());
  CommandRecorder recorder(context());
  Tensor x = random_tensor({7, 12}, 3, 4.0f);
  DeviceBuffer buffer = upload(x);
  ops.softmax_rows(recorder, all_elements(buffer), 7, 12);
  recorder.submit();
  softmax_rows_reference(x.data(), 7, 12, 12);
  EXPECT_LE(scaled_max_error(download(buffer, {7, 12}), x), 1e-6);
}

TEST_F(VulkanContextTest, BindingsAboveTheRangeLimitAreRefused) {
  VulkanContextOptions capped;
  capped.max_binding_bytes = 1024;
  open_context(capped);
  EXPECT_EQ(context().max_binding_bytes(), 1024u);
  const VulkanOps ops(context());
  CommandRecorder recorder(context());
  DeviceBuffer buffer = zeros(1000);
  try {
    ops.softmax_rows(recorder, all_elements(buffer), 10, 100);
    ADD_FAILURE() << "a 4000-byte binding passed a 1024-byte limit";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("more than the 1024 one binding may span"), std::string::npos) << e.what();
  }
  // Operands smaller than the kernel needs are refused before recording.
  EXPECT_THROW(ops.softmax_rows(recorder, {&buffer, 990, 10}, 2, 10), Error);
}

}  // namespace
}  // namespace sam2rt::testing

#endif
