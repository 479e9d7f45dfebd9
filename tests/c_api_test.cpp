#include "api/sam2rt_c.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "api/predictor.h"
#include "cli_runner.h"
#include "test_paths.h"

namespace {

using sam2rt::testing::fixtures_dir;
using sam2rt::testing::ScratchDir;

std::string micro_yaml() { return fixtures_dir() + "/micro/sam2.1_micro.yaml"; }
std::string micro_image() { return fixtures_dir() + "/images/chelsea_288x112.png"; }

struct ModelDeleter {
  void operator()(sam2rt_model* model) const { sam2rt_model_free(model); }
};
struct PredictorDeleter {
  void operator()(sam2rt_predictor* predictor) const { sam2rt_predictor_free(predictor); }
};
using ModelHandle = std::unique_ptr<sam2rt_model, ModelDeleter>;
using PredictorHandle = std::unique_ptr<sam2rt_predictor, PredictorDeleter>;

ModelHandle micro_model() { return ModelHandle(sam2rt_model_synthetic(0, nullptr, micro_yaml().c_str())); }

// The logits and scores of one prediction, owned.
struct Masks {
  int32_t num_masks = 0, width = 0, height = 0;
  std::vector<float> logits;
  std::vector<float> iou;
  float object_score_logit = 0;
};

Masks predict_click(const sam2rt_predictor* predictor, float x, float y, bool multimask) {
  const float point[2] = {x, y};
  const int32_t label = 1;
  sam2rt_masks out{};
  EXPECT_EQ(sam2rt_predict(predictor, point, &label, 1, nullptr, multimask ? 1 : 0, &out), 0) << sam2rt_last_error();
  Masks masks{out.num_masks, out.width, out.height, {}, {}, out.object_score_logit};
  if (out.logits) masks.logits.assign(out.logits, out.logits + static_cast<size_t>(out.num_masks) * out.width * out.height);
  masks.iou.assign(out.iou_predictions, out.iou_predictions + out.num_masks);
  sam2rt_masks_free(&out);
  return masks;
}

// Bit-for-bit equality (EXPECT_EQ on floats would also accept -0 == +0).
void expect_same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
}

void expect_same_masks(const Masks& a, const Masks& b) {
  EXPECT_EQ(a.num_masks, b.num_masks);
  EXPECT_EQ(a.width, b.width);
  EXPECT_EQ(a.height, b.height);
  expect_same_bits(a.logits, b.logits);
  expect_same_bits(a.iou, b.iou);
  EXPECT_EQ(std::memcmp(&a.object_score_logit, &b.object_score_logit, sizeof(float)), 0);
}

void expect_error(int status, const std::string& fragment) {
  EXPECT_NE(status, 0);
  EXPECT_NE(std::string(sam2rt_last_error()).find(fragment), std::string::npos)
      << "'" << sam2rt_last_error() << "' does not mention '" << fragment << "'";
}

TEST(CApi, SegmentsMicroFromAClick) {
  const std::string yaml = sam2rt::testing::fixtures_dir() + "/micro/sam2.1_micro.yaml";
  sam2rt_model* model = sam2rt_model_synthetic(0, nullptr, yaml.c_str());
  ASSERT_NE(model, nullptr) << sam2rt_last_error();
  sam2rt_predictor* predictor = sam2rt_predictor_new(model);
  ASSERT_NE(predictor, nullptr);
  const std::string image = sam2rt::testing::fixtures_dir() + "/images/chelsea_288x112.png";
  ASSERT_EQ(sam2rt_predictor_set_image_file(predictor, image.c_str()), 0) << sam2rt_last_error();
  const float point[2] = {110.0f, 41.0f};
  const int32_t label = 1;
  sam2rt_masks masks{};
  ASSERT_EQ(sam2rt_predict(predictor, point, &label, 1, nullptr, 1, &masks), 0) << sam2rt_last_error();
  EXPECT_EQ(masks.num_masks, 3);
  EXPECT_EQ(masks.width, 288);
  EXPECT_EQ(masks.height, 112);
  EXPECT_NEAR(masks.iou_predictions[2], 0.6421141028404236, 1e-5);  // micro/prompts.json p1_point.mm
  sam2rt_masks_free(&masks);

  const float outside[2] = {1000.0f, 5.0f};
  EXPECT_NE(sam2rt_predict(predictor, outside, &label, 1, nullptr, 0, &masks), 0);
  EXPECT_NE(std::string(sam2rt_last_error()).find("outside"), std::string::npos) << sam2rt_last_error();
  sam2rt_predictor_free(predictor);
  sam2rt_model_free(model);
}

TEST(CApi, ReportsLoadErrors) {
  EXPECT_EQ(sam2rt_model_load("/nonexistent/model.pt", "tiny", nullptr), nullptr);
  EXPECT_NE(std::string(sam2rt_last_error()).find("/nonexistent/model.pt"), std::string::npos);
  EXPECT_EQ(sam2rt_model_synthetic(0, "huge", nullptr), nullptr);
  EXPECT_NE(std::string(sam2rt_last_error()).find("unknown variant"), std::string::npos);
}

TEST(CApi, VersionIsMajorMinorPatch) {
  EXPECT_TRUE(std::regex_match(sam2rt_version(), std::regex("[0-9]+\\.[0-9]+\\.[0-9]+"))) << sam2rt_version();
}

TEST(CApi, HoleAndSprinkleFillingMatchesTheCppPredictor) {
  ModelHandle model = micro_model();
  ASSERT_TRUE(model) << sam2rt_last_error();
  const sam2rt_predictor_options defaults = sam2rt_predictor_options_default();
  EXPECT_EQ(defaults.mask_threshold, 0.0f);
  EXPECT_EQ(defaults.max_hole_area, 0.0);
  EXPECT_EQ(defaults.max_sprinkle_area, 0.0);
  sam2rt_predictor_options options = defaults;
  options.max_hole_area = 25;
  options.max_sprinkle_area = 25;
  PredictorHandle plain(sam2rt_predictor_new(model.get()));
  PredictorHandle filling(sam2rt_predictor_new_with_options(model.get(), &options));
  ASSERT_TRUE(plain && filling) << sam2rt_last_error();
  ASSERT_EQ(sam2rt_predictor_set_image_file(plain.get(), micro_image().c_str()), 0) << sam2rt_last_error();
  ASSERT_EQ(sam2rt_predictor_set_image_file(filling.get(), micro_image().c_str()), 0) << sam2rt_last_error();
  const Masks unfilled = predict_click(plain.get(), 110, 41, true);
  const Masks filled = predict_click(filling.get(), 110, 41, true);
  ASSERT_EQ(filled.logits.size(), unfilled.logits.size());
  EXPECT_NE(std::memcmp(filled.logits.data(), unfilled.logits.data(), filled.logits.size() * sizeof(float)), 0)
      << "the filling changed nothing: the test cannot tell whether the options arrive";

  sam2rt::ModelSource source;
  source.synthetic_salt = 0;
  source.config_path = micro_yaml();
  sam2rt::Predictor reference(sam2rt::Sam2Model::load(source), sam2rt::MaskFill{0.0f, 25, 25});
  reference.set_image(sam2rt::decode_image_file(micro_image()));
  sam2rt::Prompt prompt;
  prompt.points.push_back({110.0f, 41.0f, 1});
  const sam2rt::MaskPrediction expected = reference.predict(prompt, true);
  expect_same_bits(filled.logits, std::vector<float>(expected.masks.begin(), expected.masks.end()));
  expect_same_bits(filled.iou, expected.iou_predictions);
}

TEST(CApi, RefusesBadPredictorOptions) {
  ModelHandle model = micro_model();
  ASSERT_TRUE(model) << sam2rt_last_error();
  sam2rt_predictor_options options = sam2rt_predictor_options_default();
  options.max_hole_area = -1;
  EXPECT_EQ(sam2rt_predictor_new_with_options(model.get(), &options), nullptr);
  EXPECT_NE(std::string(sam2rt_last_error()).find("max_hole_area"), std::string::npos) << sam2rt_last_error();
  options = sam2rt_predictor_options_default();
  options.max_sprinkle_area = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(sam2rt_predictor_new_with_options(model.get(), &options), nullptr);
  EXPECT_NE(std::string(sam2rt_last_error()).find("max_sprinkle_area"), std::string::npos) << sam2rt_last_error();
  options = sam2rt_predictor_options_default();
  options.mask_threshold = std::numeric_limits<float>::infinity();
  EXPECT_EQ(sam2rt_predictor_new_with_options(model.get(), &options), nullptr);
  EXPECT_NE(std::string(sam2rt_last_error()).find("mask_threshold"), std::string::npos) << sam2rt_last_error();
  EXPECT_EQ(sam2rt_predictor_new_with_options(nullptr, nullptr), nullptr);
  EXPECT_NE(std::string(sam2rt_last_error()).find("NULL"), std::string::npos) << sam2rt_last_error();
  PredictorHandle with_defaults(sam2rt_predictor_new_with_options(model.get(), nullptr));
  EXPECT_TRUE(with_defaults) << sam2rt_last_error();
}

TEST(CApi, SavedFeaturesGiveTheSameMasks) {
  ScratchDir scratch("c_api_features");
  ModelHandle model = micro_model();
  ASSERT_TRUE(model) << sam2rt_last_error();
  PredictorHandle from_image(sam2rt_predictor_new(model.get()));
  PredictorHandle from_file(sam2rt_predictor_new(model.get()));
  PredictorHandle from_copy(sam2rt_predictor_new(model.get()));
  model.reset();  // the predictors keep the model alive
  ASSERT_EQ(sam2rt_predictor_set_image_file(from_image.get(), micro_image().c_str()), 0) << sam2rt_last_error();
  const std::string features = scratch.file("chelsea.safetensors");
  ASSERT_EQ(sam2rt_predictor_save_features(from_image.get(), features.c_str()), 0) << sam2rt_last_error();
  ASSERT_EQ(sam2rt_predictor_set_features_file(from_file.get(), features.c_str()), 0) << sam2rt_last_error();
  int32_t width = 0, height = 0;
  ASSERT_EQ(sam2rt_predictor_image_size(from_file.get(), &width, &height), 0) << sam2rt_last_error();
  EXPECT_EQ(width, 288);
  EXPECT_EQ(height, 112);
  const Masks expected = predict_click(from_image.get(), 110, 41, true);
  expect_same_masks(predict_click(from_file.get(), 110, 41, true), expected);

  // A predictor that only has features saves them again, and they read back the same.
  const std::string copy = scratch.file("copy.safetensors");
  ASSERT_EQ(sam2rt_predictor_save_features(from_file.get(), copy.c_str()), 0) << sam2rt_last_error();
  ASSERT_EQ(sam2rt_predictor_set_features_file(from_copy.get(), copy.c_str()), 0) << sam2rt_last_error();
  expect_same_masks(predict_click(from_copy.get(), 110, 41, true), expected);
}

TEST(CApi, ReadsFeaturesOfTheCliAndTheCliReadsOurs) {
  ScratchDir scratch("c_api_cli_features");
  const std::string from_cli = scratch.file("cli.safetensors"), from_library = scratch.file("library.safetensors");
  const auto encoded = sam2rt::testing::run_cli({"encode", "--synthetic-weights", "0", "--config", micro_yaml(),
                                                 "--image", micro_image(), "--out", from_cli, "--decoder-ready"},
                                                scratch);
  ASSERT_EQ(encoded.exit_code, 0) << encoded.err;
  ModelHandle model = micro_model();
  ASSERT_TRUE(model) << sam2rt_last_error();
  PredictorHandle from_image(sam2rt_predictor_new(model.get()));
  PredictorHandle from_file(sam2rt_predictor_new(model.get()));
  ASSERT_EQ(sam2rt_predictor_set_image_file(from_image.get(), micro_image().c_str()), 0) << sam2rt_last_error();
  ASSERT_EQ(sam2rt_predictor_set_features_file(from_file.get(), from_cli.c_str()), 0) << sam2rt_last_error();
  expect_same_masks(predict_click(from_file.get(), 200, 60, false), predict_click(from_image.get(), 200, 60, false));

  ASSERT_EQ(sam2rt_predictor_save_features(from_image.get(), from_library.c_str()), 0) << sam2rt_last_error();
  const auto segmented = sam2rt::testing::run_cli(
      {"segment", "--synthetic-weights", "0", "--config", micro_yaml(), "--image", micro_image(), "--features",
       from_library, "--point", "200,60", "--out", scratch.file("mask.png")},
      scratch);
  EXPECT_EQ(segmented.exit_code, 0) << segmented.err;
}

TEST(CApi, FeatureErrorsLeaveThePredictorAsItWas) {
  ScratchDir scratch("c_api_feature_errors");
  ModelHandle model = micro_model();
  ASSERT_TRUE(model) << sam2rt_last_error();
  PredictorHandle predictor(sam2rt_predictor_new(model.get()));
  ASSERT_TRUE(predictor) << sam2rt_last_error();
  const std::string features = scratch.file("features.safetensors");
  expect_error(sam2rt_predictor_save_features(predictor.get(), features.c_str()), "no image set");
  EXPECT_FALSE(std::filesystem::exists(features));
  int32_t width = -1, height = -1;
  expect_error(sam2rt_predictor_image_size(predictor.get(), &width, &height), "no image set");

  ASSERT_EQ(sam2rt_predictor_set_image_file(predictor.get(), micro_image().c_str()), 0) << sam2rt_last_error();
  const Masks before = predict_click(predictor.get(), 110, 41, false);
  expect_error(sam2rt_predictor_set_features_file(predictor.get(), "/nonexistent/features.safetensors"),
               "/nonexistent/features.safetensors");
  const std::string golden = fixtures_dir() + "/micro/golden.safetensors";
  expect_error(sam2rt_predictor_set_features_file(predictor.get(), golden.c_str()), "sam2rt encode");
  expect_error(sam2rt_predictor_set_features_file(predictor.get(), micro_image().c_str()), "chelsea_288x112.png");
  expect_error(sam2rt_predictor_save_features(predictor.get(), "/nonexistent/dir/features.safetensors"),
               "/nonexistent/dir");
  expect_same_masks(predict_click(predictor.get(), 110, 41, false), before);
}

TEST(CApi, RefusesNullArgumentsWithoutCrashing) {
  ModelHandle model = micro_model();
  ASSERT_TRUE(model) << sam2rt_last_error();
  PredictorHandle predictor(sam2rt_predictor_new(model.get()));
  ASSERT_TRUE(predictor) << sam2rt_last_error();
  int32_t size = 0;
  const float point[2] = {1, 1};
  const int32_t label = 1;
  sam2rt_masks masks{};
  expect_error(sam2rt_predict(predictor.get(), point, &label, 1, nullptr, 0, &masks), "no image set");
  EXPECT_EQ(masks.logits, nullptr);
  EXPECT_EQ(sam2rt_model_load(nullptr, nullptr, nullptr), nullptr);
  EXPECT_EQ(sam2rt_predictor_new(nullptr), nullptr);
  expect_error(sam2rt_predictor_set_image_file(nullptr, micro_image().c_str()), "NULL");
  expect_error(sam2rt_predictor_set_image_file(predictor.get(), nullptr), "NULL");
  expect_error(sam2rt_predictor_set_image_rgb(predictor.get(), nullptr, 4, 4), "NULL");
  const uint8_t pixel[3] = {1, 2, 3};
  expect_error(sam2rt_predictor_set_image_rgb(predictor.get(), pixel, 0, 1), "empty");
  expect_error(sam2rt_predictor_image_size(nullptr, &size, &size), "NULL");
  expect_error(sam2rt_predictor_image_size(predictor.get(), nullptr, &size), "NULL");
  expect_error(sam2rt_predictor_save_features(nullptr, "x.safetensors"), "NULL");
  expect_error(sam2rt_predictor_save_features(predictor.get(), nullptr), "NULL");
  expect_error(sam2rt_predictor_set_features_file(nullptr, "x.safetensors"), "NULL");
  expect_error(sam2rt_predictor_set_features_file(predictor.get(), nullptr), "NULL");
  expect_error(sam2rt_predict(nullptr, point, &label, 1, nullptr, 0, &masks), "NULL");
  expect_error(sam2rt_predict(predictor.get(), point, &label, 1, nullptr, 0, nullptr), "NULL");
  expect_error(sam2rt_predict(predictor.get(), nullptr, nullptr, 1, nullptr, 0, &masks), "num_points");
  expect_error(sam2rt_predict(predictor.get(), point, &label, -1, nullptr, 0, &masks), "num_points");
  sam2rt_masks_free(nullptr);
  sam2rt_predictor_free(nullptr);
  sam2rt_model_free(nullptr);
}

}  // namespace
