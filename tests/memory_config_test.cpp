// The memory modules' config: read from the official YAML format, the
// official SAM 2.1 values by default, and what validate_memory_config refuses.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "memory_test_inputs.h"
#include "model/config.h"
#include "model/memory_weights.h"

namespace sam2rt::testing {
namespace {

TEST(MemoryConfig, ReadsTheMicroYaml) {
  const ModelConfig config = micro_config();
  const MemoryAttentionConfig& a = config.memory_attention;
  EXPECT_EQ(a.d_model, 32);
  EXPECT_EQ(a.num_layers, 2);
  EXPECT_EQ(a.dim_feedforward, 64);
  EXPECT_EQ(a.self_attention.feat_sizes[0], 16);
  EXPECT_FALSE(a.self_attention.rope_k_repeat);
  EXPECT_TRUE(a.cross_attention.rope_k_repeat);
  EXPECT_EQ(a.cross_attention.kv_in_dim, 16);
  const MemoryEncoderConfig& e = config.memory_encoder;
  EXPECT_EQ(config.mem_dim(), 16);
  EXPECT_EQ(e.in_dim, 32);
  EXPECT_EQ(e.pos_num_pos_feats, 16);
  EXPECT_EQ(e.downsampler_embed_dim, 32);
  EXPECT_EQ(e.fuser_dim, 32);
  EXPECT_EQ(config.num_maskmem, 7);
  EXPECT_NO_THROW(validate_memory_config(config));
}

// Every official SAM 2.1 YAML has the same memory modules: the defaults.
TEST(MemoryConfig, DefaultsAreTheOfficialValues) {
  const ModelConfig config = preset_config("large");
  const MemoryAttentionConfig& a = config.memory_attention;
  EXPECT_EQ(a.d_model, 256);
  EXPECT_EQ(a.num_layers, 4);
  EXPECT_EQ(a.dim_feedforward, 2048);
  EXPECT_EQ(a.self_attention.num_heads, 1);
  EXPECT_EQ(a.cross_attention.kv_in_dim, 64);
  EXPECT_EQ(a.self_attention.feat_sizes[1], 64);
  EXPECT_EQ(a.self_attention.rope_theta, 10000.0);
  const MemoryEncoderConfig& e = config.memory_encoder;
  EXPECT_EQ(config.mem_dim(), 64);
  EXPECT_EQ(e.downsampler_kernel_size, 3);
  EXPECT_EQ(e.downsampler_stride, 2);
  EXPECT_EQ(e.downsampler_padding, 1);
  EXPECT_EQ(e.fuser_num_layers, 2);
  EXPECT_EQ(e.fuser_kernel_size, 7);
  EXPECT_EQ(config.max_obj_ptrs_in_encoder, 16);
  EXPECT_NO_THROW(validate_memory_config(config));
}

// memory_module_shapes(tiny) is the official state dict's video part: every
// key outside the image encoder, prompt encoder and mask decoder, with its
// shape, as the fixtures' manifest of sam2.1_hiera_t lists them.
TEST(MemoryConfig, ShapesAreTheOfficialStateDictsVideoPart) {
  std::ifstream file(fixtures_dir() + "/tiny/state_dict_manifest.json");
  const nlohmann::json manifest = nlohmann::json::parse(file);
  std::map<std::string, Shape> official;
  for (const nlohmann::json& entry : manifest.at("keys")) {
    const std::string key = entry.at("key");
    if (key.starts_with("image_encoder.") || key.starts_with("sam_prompt_encoder.") ||
        key.starts_with("sam_mask_decoder.")) {
      continue;
    }
    official[key] = entry.at("shape").get<Shape>();
  }
  std::map<std::string, Shape> ours;
  for (const auto& [key, shape] : memory_module_shapes(preset_config("tiny"))) ours[key] = shape;
  EXPECT_EQ(ours, official);
}

TEST(MemoryConfig, RefusesWhatTheModulesCannotRun) {
  ModelConfig config = micro_config();
  config.memory_attention.cross_attention.kv_in_dim = 32;
  EXPECT_THROW(validate_memory_config(config), Error);
  config = micro_config();
  config.memory_encoder.out_dim = 12;  // does not divide C = 32 into pointer tokens
  config.memory_encoder.pos_num_pos_feats = 12;
  config.memory_attention.cross_attention.kv_in_dim = 12;
  EXPECT_THROW(validate_memory_config(config), Error);
  config = micro_config();
  config.memory_encoder.downsampler_total_stride = 8;
  EXPECT_THROW(validate_memory_config(config), Error);
  const std::string yaml =
      "model:\n  _target_: sam2.modeling.sam2_base.SAM2Base\n"
      "  memory_attention:\n    _target_: sam2.modeling.memory_attention.MemoryAttention\n";
  EXPECT_THROW(parse_config_yaml(yaml, "inline"), Error);
}

}  // namespace
}  // namespace sam2rt::testing
