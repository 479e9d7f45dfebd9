// Features files record what made them; a predictor refuses features of
// another model, config or weights (and files without the record) unless forced.
#include <gtest/gtest.h>

#include <string>

#include "api/feature_file.h"
#include "api/model_identity.h"
#include "api/predictor.h"
#include "cli_runner.h"
#include "core/error.h"
#include "core/tensor_compare.h"
#include "io/checkpoint.h"
#include "io/safetensors.h"
#include "model/synthetic_weights.h"

namespace sam2rt::testing {
namespace {

std::string micro_pt() { return fixtures_dir() + "/micro/micro.pt"; }
std::string micro_yaml() { return fixtures_dir() + "/micro/sam2.1_micro.yaml"; }

std::shared_ptr<const Sam2Model> micro_model(ModelConfig config, uint64_t salt) {
  return std::make_shared<const Sam2Model>(config, synthetic_weights(config, salt));
}

// The message of the Error `action` throws ("" when it throws none).
template <typename Action>
std::string error_of(Action action) {
  try {
    action();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

class FeatureRecord : public ::testing::Test {
 protected:
  void SetUp() override {
    config_ = load_config_yaml(micro_yaml());
    model_ = micro_model(config_, 0);
    Predictor predictor(model_);
    image_ = decode_image_file(fixtures_dir() + "/images/chelsea_288x112.png");
    predictor.set_image(image_);
    path_ = scratch_.file("f.safetensors");
    write_feature_file(path_, predictor.encoder_outputs(), identify_model(config_, model_->weights()), "micro",
                       image_.width, image_.height, FeatureFileOptions{});
    direct_ = predictor.predict(prompt(), true);
  }
  static Prompt prompt() {
    Prompt p;
    p.points.push_back({110, 41, 1});
    return p;
  }

  ScratchDir scratch_{"feature_record"};
  ModelConfig config_;
  std::shared_ptr<const Sam2Model> model_;
  RgbImage image_;
  std::string path_;
  MaskPrediction direct_;
};

TEST_F(FeatureRecord, SameModelReusesTheFeatures) {
  Predictor predictor(model_);
  predictor.set_features(read_feature_file(path_));
  EXPECT_EQ(compare_tensors(predictor.predict(prompt(), true).masks, direct_.masks).max_abs_err, 0.0);
}

// micro.pt holds the salt-0 weights: the fingerprint is of the tensors, not of the file.
TEST_F(FeatureRecord, WeightsFingerprintIsOfTheTensorsNotTheFile) {
  EXPECT_EQ(weights_fingerprint(load_checkpoint(micro_pt()), config_), weights_fingerprint(model_->weights(), config_));
  EXPECT_NE(weights_fingerprint(synthetic_weights(config_, 1), config_), weights_fingerprint(model_->weights(), config_));
}

TEST_F(FeatureRecord, OtherWeightsAreRefusedNamingBoth) {
  const auto other = micro_model(config_, 1);
  Predictor predictor(other);
  const std::string message = error_of([&] { predictor.set_features(read_feature_file(path_)); });
  EXPECT_NE(message.find("made with weights " + weights_fingerprint(model_->weights(), config_)), std::string::npos)
      << message;
  EXPECT_NE(message.find("this model has weights " + weights_fingerprint(other->weights(), config_)),
            std::string::npos)
      << message;
  EXPECT_FALSE(predictor.has_image());
  predictor.set_features(read_feature_file(path_), true);  // forced: shapes fit, so it decodes
  EXPECT_TRUE(predictor.has_image());
}

TEST_F(FeatureRecord, OtherConfigIsRefusedNamingBoth) {
  ModelConfig changed = config_;
  changed.trunk.global_att_blocks = {3};  // same weight shapes, another network
  changed.name = "changed";
  Predictor predictor(std::make_shared<const Sam2Model>(changed, synthetic_weights(changed, 0)));
  const std::string message = error_of([&] { predictor.set_features(read_feature_file(path_)); });
  EXPECT_NE(message.find("config '" + config_.name + "' (hash " + config_hash(config_) + ")"), std::string::npos)
      << message;
  EXPECT_NE(message.find("config 'changed' (hash " + config_hash(changed) + ")"), std::string::npos) << message;
}

TEST_F(FeatureRecord, ConfigHashIgnoresOnlyTheName) {
  ModelConfig renamed = config_;
  renamed.name = "renamed";
  EXPECT_EQ(config_hash(renamed), config_hash(config_));
  ModelConfig changed = config_;
  changed.stability_thresh = 0.97;
  EXPECT_NE(config_hash(changed), config_hash(config_));
}

// A file of an older sam2rt (format v1, no record) must be encoded again, or forced.
TEST_F(FeatureRecord, FileWithoutRecordIsRefusedUnlessForced) {
  const FeatureFile current = read_feature_file(path_);
  const std::string old_path = scratch_.file("old.safetensors");
  write_safetensors(old_path,
                    {{"image_embed", current.features.image_embed},
                     {"feat_s1", current.features.feat_s1},
                     {"feat_s0", current.features.feat_s0}},
                    {{"format", "sam2rt.features.v1"},
                     {"variant", config_.name},
                     {"image_size", "256"},
                     {"orig_width", "288"},
                     {"orig_height", "112"}});
  Predictor predictor(model_);
  const std::string message = error_of([&] { predictor.set_features(read_feature_file(old_path)); });
  EXPECT_NE(message.find("do not record which model made them"), std::string::npos) << message;
  EXPECT_NE(message.find("--force-features"), std::string::npos) << message;
  predictor.set_features(read_feature_file(old_path), true);
  EXPECT_EQ(compare_tensors(predictor.predict(prompt(), true).masks, direct_.masks).max_abs_err, 0.0);
}

}  // namespace
}  // namespace sam2rt::testing
