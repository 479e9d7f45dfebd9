// The video memory modules written against Backend (model/memory_encoder.h,
// model/memory_attention.h) on the Vulkan backend (lavapipe in CI), fp32,
// validation layers on: the micro module goldens at the CPU's tolerance.
#ifdef SAM2RT_VULKAN

#include <gtest/gtest.h>

#include <iostream>
#include <memory>
#include <optional>

#include "backends/vulkan/vulkan_backend.h"
#include "memory_goldens.h"
#include "model/memory_attention.h"
#include "model/memory_encoder.h"
#include "model/position_encoding.h"
#include "vulkan_test_context.h"

namespace sam2rt::testing {
namespace {

using VulkanMemoryModulesMicro = VulkanBackendTest;

TEST_F(VulkanMemoryModulesMicro, MatchTheModuleGoldens) {
  const std::optional<ModuleGoldens> g = module_goldens("micro");
  ASSERT_TRUE(g.has_value());
  const auto device = backend();
  const auto& tensors = g->golden.tensors;
  const ModelConfig& config = g->config;
  const int64_t s = config.image_size, side = g->side;

  const MemoryEncoder encoder(config, g->weights, device);
  const MemoryEncoderOutput encoded =
      encoder.encode(as_rows(tensors.at("me.pix_feat")), tensors.at("me.mask_for_mem").reshaped({1, s, s}), false);
  const double encoder_error = max_abs_error_to_golden(encoded.features, *g, "me.vision_features");
  EXPECT_LE(encoder_error, 1e-4);

  const MemoryAttention attention(config, g->weights, device);
  const Tensor curr_pos = as_rows(sine_position_encoding(config.embed_dim(), side, side, 10000.0, true));
  const Tensor memory = as_rows(tensors.at("ma.memory")), memory_pos = as_rows(tensors.at("ma.memory_pos"));
  const Tensor out =
      attention.forward(as_rows(tensors.at("ma.curr")), curr_pos, memory, memory_pos, memory.dim(0) - 2 * side * side);
  const double attention_error = max_abs_error_to_golden(out, *g, "ma.ptrs.out");
  EXPECT_LE(attention_error, 1e-4);
  std::cout << "vulkan micro max abs errors: vision_features " << encoder_error << ", memory attention with pointers "
            << attention_error << "\n";
}

// Tiny's memory attention (heads of 256 channels, through the scores) at the
// CPU's tolerance. Run by hand (--gtest_also_run_disabled_tests): about 450
// GFLOP, minutes at lavapipe's 1-3 GFLOP/s; CI checks the op at those heads
// (BackendOps, VulkanOpsTest) and the module on micro (above).
using VulkanMemoryModulesTiny = VulkanBackendTest;

TEST_F(VulkanMemoryModulesTiny, DISABLED_MemoryAttentionMatchesTheModuleGoldens) {
  expect_module_goldens("tiny", backend());
}

}  // namespace
}  // namespace sam2rt::testing

#endif  // SAM2RT_VULKAN
