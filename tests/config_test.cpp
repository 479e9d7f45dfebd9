#include <gtest/gtest.h>

#include <fstream>

#include "core/error.h"
#include "model/config.h"
#include "model/weight_manifest.h"
#include "test_paths.h"

namespace sam2rt {
namespace {

TEST(Config, PresetsMatchOfficialYamls) {
  ModelConfig tiny = preset_config("tiny");
  EXPECT_EQ(tiny.trunk.stages, (std::vector<int>{1, 2, 7, 2}));
  EXPECT_EQ(tiny.trunk.global_att_blocks, (std::vector<int>{5, 7, 9}));
  EXPECT_EQ(tiny.trunk.window_spec, (std::vector<int>{8, 4, 14, 7}));
  ModelConfig small = preset_config("small");
  EXPECT_EQ(small.trunk.stages, (std::vector<int>{1, 2, 11, 2}));
  EXPECT_EQ(small.trunk.global_att_blocks, (std::vector<int>{7, 10, 13}));
  ModelConfig base_plus = preset_config("base_plus");
  EXPECT_EQ(base_plus.trunk.embed_dim, 112);
  EXPECT_EQ(base_plus.trunk.num_heads, 2);
  EXPECT_EQ(base_plus.trunk.stages, (std::vector<int>{2, 3, 16, 3}));
  EXPECT_EQ(base_plus.trunk.global_att_blocks, (std::vector<int>{12, 16, 20}));
  EXPECT_EQ(base_plus.trunk.window_pos_embed_bkg_spatial_size, (std::array<int, 2>{14, 14}));
  ModelConfig large = preset_config("large");
  EXPECT_EQ(large.trunk.stages, (std::vector<int>{2, 6, 36, 4}));
  EXPECT_EQ(large.trunk.window_spec, (std::vector<int>{8, 4, 16, 8}));
  EXPECT_EQ(large.neck.backbone_channel_list, (std::vector<int>{1152, 576, 288, 144}));
  for (const auto& name : preset_names()) {
    EXPECT_NO_THROW(validate_config(preset_config(name))) << name;
    EXPECT_EQ(preset_config(name).image_size, 1024);
  }
  EXPECT_THROW(preset_config("huge"), Error);
}

TEST(Config, ReadsTheMicroYaml) {
  ModelConfig micro = load_config_yaml(testing::fixtures_dir() + "/micro/sam2.1_micro.yaml");
  EXPECT_EQ(micro.image_size, 256);
  EXPECT_EQ(micro.trunk.embed_dim, 16);
  EXPECT_EQ(micro.trunk.num_heads, 1);
  EXPECT_EQ(micro.trunk.stages, (std::vector<int>{1, 2, 2, 1}));
  EXPECT_EQ(micro.trunk.global_att_blocks, (std::vector<int>{4}));
  EXPECT_EQ(micro.trunk.window_spec, (std::vector<int>{8, 6, 6, 3}));
  EXPECT_EQ(micro.trunk.window_pos_embed_bkg_spatial_size, (std::array<int, 2>{4, 4}));
  EXPECT_EQ(micro.neck.d_model, 32);
  EXPECT_EQ(micro.neck.backbone_channel_list, (std::vector<int>{128, 64, 32, 16}));
  EXPECT_EQ(micro.embed_dim(), 32);
  EXPECT_EQ(micro.low_res_mask_size(), 64);
}

std::string micro_yaml_with(const std::string& from, const std::string& to) {
  std::ifstream in(testing::fixtures_dir() + "/micro/sam2.1_micro.yaml");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

void expect_config_error(const std::string& yaml, const std::string& fragment) {
  try {
    parse_config_yaml(yaml, "test.yaml");
    ADD_FAILURE() << "accepted a config that should fail with: " << fragment;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(Config, RefusesImpossibleValues) {
  expect_config_error(micro_yaml_with("embed_dim: 16", "embed_dim: 0"), "embed_dim");
  expect_config_error(micro_yaml_with("window_spec: [8, 6, 6, 3]", "window_spec: [7, 6, 6, 3]"), "window_spec[0]");
  expect_config_error(micro_yaml_with("stages: [1, 2, 2, 1]", "stages: [1, 2, 0, 1]"), "stage");
  expect_config_error(micro_yaml_with("global_att_blocks: [4]", "global_att_blocks: [40]"), "global_att_blocks");
  expect_config_error(micro_yaml_with("image_size: 256", "image_size: 250"), "image_size");
  expect_config_error(micro_yaml_with("backbone_channel_list: [128, 64, 32, 16]", "backbone_channel_list: [128, 64, 32]"),
                      "backbone_channel_list");
  expect_config_error(micro_yaml_with("sam2.modeling.backbones.hieradet.Hiera", "os.system"), "_target_");
  expect_config_error(micro_yaml_with("embed_dim: 16", "embed_dim: [1, 2]"), "embed_dim");
  expect_config_error("model: [unclosed", "YAML");
  expect_config_error("just a string", "mapping");
  expect_config_error("", "mapping");
}

TEST(Config, ManifestCoversEveryImagePathModule) {
  auto specs = image_path_weights(preset_config("tiny"));
  int trunk = 0, neck = 0, prompt = 0, decoder = 0;
  for (const auto& s : specs) {
    trunk += s.key.rfind("image_encoder.trunk.", 0) == 0;
    neck += s.key.rfind("image_encoder.neck.", 0) == 0;
    prompt += s.key.rfind("sam_prompt_encoder.", 0) == 0;
    decoder += s.key.rfind("sam_mask_decoder.", 0) == 0;
  }
  EXPECT_EQ(trunk, 4 + 12 * 12 + 3 * 2);  // 2 pos embeds + patch embed, 12 params per block, 3 q-pool projections
  EXPECT_EQ(neck, 8);
  EXPECT_GT(prompt, 10);
  EXPECT_GT(decoder, 100);
}

}  // namespace
}  // namespace sam2rt
