// The variant of a checkpoint from its tensor shapes: every preset of SAM 2.1
// and SAM 2.0, custom architectures left undetected, explicit choices that
// conflict with the checkpoint refused naming both.
#include <gtest/gtest.h>

#include "api/model_source.h"
#include "cli_runner.h"
#include "core/error.h"
#include "io/safetensors.h"
#include "model/synthetic_weights.h"
#include "model/variant_detection.h"
#include "model/weight_manifest.h"

namespace sam2rt::testing {
namespace {

// The keys and shapes of an official checkpoint of `variant`: the image path,
// plus the memory-module keys of the release (only their presence matters).
ShapeMap official_shapes(const std::string& variant, const std::string& release) {
  ShapeMap shapes;
  for (const WeightSpec& spec : image_path_weights(preset_config(variant))) shapes.emplace(spec.key, spec.shape);
  if (release != "image path only") {
    shapes.emplace("maskmem_tpos_enc", Shape{7, 1, 1, 64});
    shapes.emplace("memory_encoder.out_proj.weight", Shape{64, 256, 1, 1});
  }
  if (release == "SAM 2.1") shapes.emplace("no_obj_embed_spatial", Shape{1, 64});
  return shapes;
}

TEST(VariantDetection, TellsEveryPresetOfBothReleases) {
  for (const std::string& variant : preset_names()) {
    const std::vector<std::pair<std::string, std::string>> releases = {
        {"SAM 2.1", "SAM 2.1"}, {"SAM 2.0", "SAM 2.0"}, {"image path only", "SAM 2"}};
    for (const auto& [release, expected] : releases) {
      SCOPED_TRACE(variant + " " + release);
      const auto detected = detect_variant(official_shapes(variant, release));
      ASSERT_TRUE(detected.has_value());
      EXPECT_EQ(detected->variant, variant);
      EXPECT_EQ(detected->release, expected);
    }
  }
}

TEST(VariantDetection, CustomOrBrokenArchitecturesAreNotDetected) {
  ShapeMap micro;
  for (const WeightSpec& spec : image_path_weights(load_config_yaml(fixtures_dir() + "/micro/sam2.1_micro.yaml"))) {
    micro.emplace(spec.key, spec.shape);
  }
  EXPECT_FALSE(detect_variant(micro).has_value());
  ShapeMap tiny_missing_a_key = official_shapes("tiny", "SAM 2.1");
  tiny_missing_a_key.erase("sam_mask_decoder.iou_token.weight");
  EXPECT_FALSE(detect_variant(tiny_missing_a_key).has_value());
  EXPECT_EQ(shape_mismatch(tiny_missing_a_key, preset_config("tiny")), "no key 'sam_mask_decoder.iou_token.weight'");
  // Tiny's trunk with one block more is not Tiny.
  ShapeMap deeper = official_shapes("tiny", "SAM 2.1");
  deeper.emplace("image_encoder.trunk.blocks.12.norm1.weight", Shape{768});
  EXPECT_FALSE(detect_variant(deeper).has_value());
}

class VariantDetectionSource : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    weights_ = new WeightMap(synthetic_weights(preset_config("small"), 0));
    weights_->insert("no_obj_embed_spatial", Tensor({1, 64}));
  }
  static void TearDownTestSuite() { delete weights_; }
  static ModelSource source(const std::string& variant) {
    ModelSource s;
    s.checkpoint_path = "/models/sam2.1_hiera_small.pt";
    s.variant = variant;
    return s;
  }
  static WeightMap* weights_;
};
WeightMap* VariantDetectionSource::weights_ = nullptr;

TEST_F(VariantDetectionSource, DetectsAndSaysSo) {
  std::string detection;
  const ModelConfig config = source("").resolve_config(*weights_, &detection);
  EXPECT_EQ(config.name, "small");
  EXPECT_EQ(detection, "detected SAM 2.1 hiera small in 'sam2.1_hiera_small.pt'");
  EXPECT_EQ(source("").describe(config), "small, sam2.1_hiera_small.pt");
}

TEST_F(VariantDetectionSource, ExplicitVariantWinsAndAConflictNamesBoth) {
  std::string detection;
  EXPECT_EQ(source("small").resolve_config(*weights_, &detection).name, "small");
  EXPECT_EQ(detection, "");
  try {
    source("tiny").resolve_config(*weights_, &detection);
    FAIL() << "tiny accepted for a small checkpoint";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("--variant tiny conflicts with the checkpoint 'sam2.1_hiera_small.pt', which holds SAM "
                           "2.1 hiera small"),
              std::string::npos)
        << message;
  }
}

// End to end: a Tiny checkpoint (synthetic weights, as .safetensors) loads
// without --variant; an explicit --variant large is refused before any work.
TEST(VariantDetectionCli, TinyCheckpointIsDetected) {
  ScratchDir s("variant_detection");
  WeightMap weights = synthetic_weights(preset_config("tiny"), 0);
  NamedTensors tensors(weights.all().begin(), weights.all().end());
  write_safetensors(s.file("tiny.safetensors"), tensors, {});
  const std::vector<std::string> segment = {"segment", "--model", s.file("tiny.safetensors"), "--image",
                                            fixtures_dir() + "/images/chelsea_288x112.png", "--point", "110,41",
                                            "--out", s.file("mask.png"), "--logits", s.file("l.safetensors")};
  CliResult r = run_cli(segment, s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("detected SAM 2 hiera tiny in 'tiny.safetensors'\n"), std::string::npos) << r.err;
  EXPECT_EQ(read_safetensors(s.file("l.safetensors")).tensors.at("low_res_masks").shape(), (Shape{1, 256, 256}));

  std::vector<std::string> conflicting = segment;
  conflicting.insert(conflicting.end(), {"--variant", "large"});
  r = run_cli(conflicting, s);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("sam2rt: error: --variant large conflicts with the checkpoint 'tiny.safetensors', which holds "
                       "SAM 2 hiera tiny"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace sam2rt::testing
