#include "model/memory_encoder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "backends/cpu_backend.h"
#include "core/error.h"
#include "io/checkpoint.h"
#include "kernels/layout.h"
#include "memory_goldens.h"
#include "memory_reference.h"
#include "memory_test_inputs.h"
#include "model/memory_weights.h"
#include "model/position_encoding.h"

namespace sam2rt::testing {
namespace {

double max_abs_error(const Tensor& actual, const Tensor& expected) {
  EXPECT_EQ(actual.shape(), expected.shape());
  double error = 0.0;
  for (int64_t i = 0; i < expected.numel() && i < actual.numel(); ++i) {
    error = std::max(error, std::abs(static_cast<double>(actual[i]) - expected[i]));
  }
  return error;
}

void expect_matches_reference(const ModelConfig& config, const WeightMap& weights) {
  const MemoryEncoder encoder(config, weights, std::make_shared<CpuBackend>());
  const int64_t side = config.image_embedding_size();
  const Tensor pix_feat = random_tensor({side * side, config.embed_dim()}, 501);
  const Tensor mask = memory_mask_input(config.image_size, 502);
  for (const bool absent : {false, true}) {
    SCOPED_TRACE(absent ? "object absent" : "object present");
    const MemoryEncoderOutput out = encoder.encode(pix_feat, mask, absent);
    const Tensor expected = memory_reference::memory_encoder(config, weights, pix_feat, mask, absent);
    EXPECT_LE(max_abs_error(out.features, expected), 1e-4);
    // The sine encoding of the E x E map, channels-last.
    const Tensor pos = nchw_to_hwc(sine_position_encoding(config.mem_dim(), side, side, 10000.0, true));
    EXPECT_EQ(max_abs_error(out.pos_enc, pos.reshaped({side * side, config.mem_dim()})), 0.0);
  }
}

TEST(MemoryEncoder, MatchesThePlainReferenceOnMicroShapes) {
  const ModelConfig config = micro_config();
  expect_matches_reference(config, synthetic_memory_weights(config, 0));
}

TEST(MemoryEncoder, MatchesThePlainReferenceOnTheMicroCheckpoint) {
  const ModelConfig config = micro_config();
  expect_matches_reference(config, load_checkpoint(fixtures_dir() + "/micro/micro.pt"));
}

TEST(MemoryEncoder, TakesChannelsLastMapsOnTheBackend) {
  const ModelConfig config = micro_config();
  const WeightMap weights = synthetic_memory_weights(config, 3);
  auto backend = std::make_shared<CpuBackend>();
  const MemoryEncoder encoder(config, weights, backend);
  const int64_t side = config.image_embedding_size(), c = config.embed_dim();
  const Tensor pix_feat = random_tensor({side, side, c}, 503);
  const Tensor mask = memory_mask_input(config.image_size, 504);
  const Tensor from_host = encoder.encode(pix_feat, mask, false).features;
  const Tensor from_device = encoder.encode(backend->input(pix_feat), mask, false).features;
  EXPECT_EQ(std::memcmp(from_host.data(), from_device.data(), sizeof(float) * from_host.numel()), 0);
}

TEST(MemoryEncoder, RefusesInputsOfAnotherSize) {
  const ModelConfig config = micro_config();
  const MemoryEncoder encoder(config, synthetic_memory_weights(config, 0), std::make_shared<CpuBackend>());
  const int64_t side = config.image_embedding_size(), c = config.embed_dim();
  EXPECT_THROW(encoder.encode(Tensor({side * side, c + 1}), Tensor({1, 256, 256}), false), Error);
  EXPECT_THROW(encoder.encode(Tensor({side * side, c}), Tensor({1, 128, 128}), false), Error);
}

TEST(MemoryEncoder, RoundsToBfloat16AsTorchDoes) {
  // Ties go to the even bfloat16: 1 + 2^-8 is halfway between 1 and 1 + 2^-7.
  Tensor x({5});
  x[0] = 1.0f + std::ldexp(1.0f, -8);
  x[1] = 1.0f + 3 * std::ldexp(1.0f, -8);
  x[2] = 1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20);
  x[3] = -2.5f;
  x[4] = std::nanf("");
  round_to_bfloat16_in_place(x);
  EXPECT_EQ(x[0], 1.0f);
  EXPECT_EQ(x[1], 1.0f + std::ldexp(1.0f, -6));
  EXPECT_EQ(x[2], 1.0f + std::ldexp(1.0f, -7));
  EXPECT_EQ(x[3], -2.5f);
  EXPECT_TRUE(std::isnan(x[4]));
}

// The module goldens: MemoryEncoder.forward on the frame's neck level 2 and a
// mask_for_mem, and _encode_new_memory on high-res logits, binarized with the
// object present and through the sigmoid with it absent (no_obj_embed_spatial).
void expect_module_goldens(const std::string& name) {
  const std::optional<ModuleGoldens> g = module_goldens(name);
  ASSERT_TRUE(g.has_value()) << module_goldens_path(name) << " is missing (tests/video/goldens, committed)";
  const ModelConfig& config = g->config;
  const int64_t s = config.image_size;
  const MemoryEncoder encoder(config, g->weights, std::make_shared<CpuBackend>());
  const auto& tensors = g->golden.tensors;
  const Tensor pix_feat =
      as_rows(tensors.contains("me.pix_feat")
                  ? tensors.at("me.pix_feat")
                  : read_safetensors(fixtures_dir() + "/" + name + "/golden.safetensors").tensors.at("neck.level2"));
  const Tensor mask_for_mem = recipe("video.me.mask_for_mem", {1, s, s}, 10.0);
  if (tensors.contains("me.mask_for_mem")) {
    ASSERT_EQ(std::memcmp(mask_for_mem.data(), tensors.at("me.mask_for_mem").data(), sizeof(float) * s * s), 0);
  }
  const MemoryEncoderOutput out = encoder.encode(pix_feat, mask_for_mem, false);
  const double features_error = max_abs_error_to_golden(out.features, *g, "me.vision_features");
  const double pos_error = max_abs_error_to_golden(out.pos_enc, *g, "me.vision_pos_enc");
  EXPECT_LE(features_error, 1e-4);
  EXPECT_LE(pos_error, 1e-4);

  const Tensor logits = recipe("video.me.high_res_logits", {1, s, s}, 20.0);
  const Tensor binarized = memory_encoder_mask(logits, true, config), soft = memory_encoder_mask(logits, false, config);
  const double present_error = max_abs_error_to_golden(encoder.encode(pix_feat, binarized, false).features, *g,
                                                       "enc.pts_present.maskmem_features");
  const double absent_error =
      max_abs_error_to_golden(encoder.encode(pix_feat, soft, true).features, *g, "enc.track_absent.maskmem_features");
  EXPECT_LE(present_error, 1e-4);
  EXPECT_LE(absent_error, 1e-4);
  std::cout << name << " max abs errors: vision_features " << features_error << ", vision_pos_enc " << pos_error
            << ", pts_present " << present_error << ", track_absent " << absent_error << "\n";
}

TEST(MemoryEncoder, MatchesTheMicroModuleGoldens) { expect_module_goldens("micro"); }

TEST(MemoryEncoder, MatchesTheTinyModuleGoldens) { expect_module_goldens("tiny"); }

}  // namespace
}  // namespace sam2rt::testing
