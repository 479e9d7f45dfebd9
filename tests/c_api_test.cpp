#include "api/sam2rt_c.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "api/amg_json.h"
#include "api/automatic_mask_generator.h"
#include "api/predictor.h"
#include "cli_runner.h"
#include "scoped_environment.h"
#include "test_paths.h"

namespace {

using sam2rt::testing::fixtures_dir;
using sam2rt::testing::read_text;
using sam2rt::testing::ScratchDir;
using sam2rt::testing::shell_quote;

std::string micro_yaml() { return fixtures_dir() + "/micro/sam2.1_micro.yaml"; }
std::string micro_image() { return fixtures_dir() + "/images/chelsea_288x112.png"; }

struct ModelDeleter {
  void operator()(sam2rt_model* model) const { sam2rt_model_free(model); }
};
struct PredictorDeleter {
  void operator()(sam2rt_predictor* predictor) const { sam2rt_predictor_free(predictor); }
};
struct AmgDeleter {
  void operator()(sam2rt_amg* amg) const { sam2rt_amg_free(amg); }
};
struct AmgResultDeleter {
  void operator()(sam2rt_amg_result* result) const { sam2rt_amg_result_free(result); }
};
using ModelHandle = std::unique_ptr<sam2rt_model, ModelDeleter>;
using PredictorHandle = std::unique_ptr<sam2rt_predictor, PredictorDeleter>;
using AmgHandle = std::unique_ptr<sam2rt_amg, AmgDeleter>;
using AmgResultHandle = std::unique_ptr<sam2rt_amg_result, AmgResultDeleter>;

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

TEST(CApi, ModelsOnADeviceNamedCpuOrNullAreTheCpuModel) {
  ModelHandle plain = micro_model();
  ModelHandle named(sam2rt_model_synthetic_on_device(0, nullptr, micro_yaml().c_str(), "cpu"));
  ModelHandle null_device(sam2rt_model_synthetic_on_device(0, nullptr, micro_yaml().c_str(), nullptr));
  ASSERT_TRUE(plain && named && null_device) << sam2rt_last_error();
  std::vector<Masks> results;
  for (const sam2rt_model* model : {plain.get(), named.get(), null_device.get()}) {
    PredictorHandle predictor(sam2rt_predictor_new(model));
    ASSERT_EQ(sam2rt_predictor_set_image_file(predictor.get(), micro_image().c_str()), 0) << sam2rt_last_error();
    results.push_back(predict_click(predictor.get(), 110.0f, 41.0f, true));
  }
  expect_same_masks(results[0], results[1]);
  expect_same_masks(results[0], results[2]);
}

TEST(CApi, AnUnknownDeviceIsRefusedNamingTheSupportedOnes) {
  for (const char* device : {"cuda", "cuda:0", "CPU", "vulkan:", "vulkan:x", "vulkan:-1", "vulkan:1x", "vulkan:256"}) {
    EXPECT_EQ(sam2rt_model_synthetic_on_device(0, nullptr, micro_yaml().c_str(), device), nullptr) << device;
    const std::string error = sam2rt_last_error();
    EXPECT_NE(error.find("is not supported: use \"cpu\", \"vulkan\" or \"vulkan:N\""), std::string::npos) << error;
  }
  EXPECT_EQ(sam2rt_model_load_on_device("/nonexistent/model.pt", nullptr, micro_yaml().c_str(), "tpu"), nullptr);
  EXPECT_NE(std::string(sam2rt_last_error()).find("'tpu'"), std::string::npos) << sam2rt_last_error();
}

TEST(CApi, WithoutAVulkanDriverAVulkanModelFailsInOneLine) {
  const sam2rt::testing::ScopedEnvironment icd("VK_ICD_FILENAMES", "/nonexistent/sam2rt_no_driver.json");
  const sam2rt::testing::ScopedEnvironment drivers("VK_DRIVER_FILES", "/nonexistent/sam2rt_no_driver.json");
  for (const char* device : {"vulkan", "vulkan:0"}) {
    EXPECT_EQ(sam2rt_model_synthetic_on_device(0, nullptr, micro_yaml().c_str(), device), nullptr) << device;
    const std::string error = sam2rt_last_error();
    EXPECT_EQ(error.find("no Vulkan device: "), 0u) << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
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

// ---- The automatic mask generator ----

// The records of a C result as the C++ API's masks, checking on the way that each
// record's COCO string and decoded mask agree with its uncompressed runs.
std::vector<sam2rt::AmgMask> masks_of(const sam2rt_amg_result* result) {
  std::vector<sam2rt::AmgMask> masks;
  const int64_t count = sam2rt_amg_result_count(result);
  EXPECT_GE(count, 0) << sam2rt_last_error();
  for (int64_t i = 0; i < count; ++i) {
    sam2rt_amg_mask record{};
    EXPECT_EQ(sam2rt_amg_result_get(result, i, &record), 0) << sam2rt_last_error();
    sam2rt::AmgMask& mask = masks.emplace_back();
    mask.segmentation = {record.height, record.width,
                         std::vector<int64_t>(record.rle_counts, record.rle_counts + record.num_rle_counts)};
    mask.area = record.area;
    std::copy_n(record.bbox, 4, mask.bbox.begin());
    mask.predicted_iou = record.predicted_iou;
    std::copy_n(record.point_coords, 2, mask.point_coords.begin());
    mask.stability_score = record.stability_score;
    std::copy_n(record.crop_box, 4, mask.crop_box.begin());
    EXPECT_EQ(record.coco_rle, sam2rt::coco_rle_string(mask.segmentation)) << "mask " << i;
    std::vector<uint8_t> pixels(static_cast<size_t>(record.height * record.width), 7);
    EXPECT_EQ(sam2rt_amg_result_decode_mask(result, i, pixels.data(), static_cast<int64_t>(pixels.size())), 0)
        << sam2rt_last_error();
    EXPECT_EQ(pixels, sam2rt::decode_rle(mask.segmentation)) << "mask " << i;
  }
  return masks;
}

void expect_same_records(const std::vector<sam2rt::AmgMask>& actual, const std::vector<sam2rt::AmgMask>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    SCOPED_TRACE("mask " + std::to_string(i));
    EXPECT_EQ(actual[i].segmentation.height, expected[i].segmentation.height);
    EXPECT_EQ(actual[i].segmentation.width, expected[i].segmentation.width);
    EXPECT_EQ(actual[i].segmentation.counts, expected[i].segmentation.counts);
    EXPECT_EQ(actual[i].area, expected[i].area);
    EXPECT_EQ(actual[i].bbox, expected[i].bbox);
    EXPECT_EQ(std::memcmp(&actual[i].predicted_iou, &expected[i].predicted_iou, sizeof(float)), 0);
    EXPECT_EQ(std::memcmp(actual[i].point_coords.data(), expected[i].point_coords.data(), 2 * sizeof(float)), 0);
    EXPECT_EQ(std::memcmp(&actual[i].stability_score, &expected[i].stability_score, sizeof(float)), 0);
    EXPECT_EQ(actual[i].crop_box, expected[i].crop_box);
  }
}

TEST(CApiAmg, DefaultsAreTheOfficialOnes) {
  const sam2rt_amg_params p = sam2rt_amg_params_default();
  EXPECT_EQ(p.points_per_side, 32);
  EXPECT_EQ(p.points_per_batch, 64);
  EXPECT_EQ(p.pred_iou_thresh, 0.8);
  EXPECT_EQ(p.stability_score_thresh, 0.95);
  EXPECT_EQ(p.stability_score_offset, 1.0);
  EXPECT_EQ(p.mask_threshold, 0.0);
  EXPECT_EQ(p.box_nms_thresh, 0.7);
  EXPECT_EQ(p.crop_n_layers, 0);
  EXPECT_EQ(p.crop_nms_thresh, 0.7);
  EXPECT_EQ(p.crop_overlap_ratio, 512.0 / 1500.0);
  EXPECT_EQ(p.crop_n_points_downscale_factor, 1);
  EXPECT_EQ(p.min_mask_region_area, 0.0);
  EXPECT_EQ(p.use_m2m, 0);
  EXPECT_EQ(p.multimask_output, 1);
  EXPECT_EQ(p.num_point_grids, 0);
  EXPECT_EQ(p.point_grid_sizes, nullptr);
  EXPECT_EQ(p.point_grids, nullptr);
}

// A golden case of ../shared/fixtures/amg through the C API: its records must be the
// C++ generator's, bit for bit, and pass the fixtures' own checker.
void check_golden_case(const std::string& name) {
  const std::string golden_path = fixtures_dir() + "/amg/" + name + ".json";
  const nlohmann::json golden = nlohmann::json::parse(read_text(golden_path));
  ASSERT_EQ(golden["model"]["config"], "sam2.1_micro.yaml");
  const nlohmann::json& g = golden["params"];
  sam2rt_amg_params params = sam2rt_amg_params_default();
  params.points_per_side = g["points_per_side"].get<int32_t>();
  params.points_per_batch = g["points_per_batch"].get<int32_t>();
  params.pred_iou_thresh = g["pred_iou_thresh"].get<double>();
  params.stability_score_thresh = g["stability_score_thresh"].get<double>();
  params.stability_score_offset = g["stability_score_offset"].get<double>();
  params.mask_threshold = g["mask_threshold"].get<double>();
  params.box_nms_thresh = g["box_nms_thresh"].get<double>();
  params.crop_n_layers = g["crop_n_layers"].get<int32_t>();
  params.crop_nms_thresh = g["crop_nms_thresh"].get<double>();
  params.crop_overlap_ratio = g["crop_overlap_ratio"].get<double>();
  params.crop_n_points_downscale_factor = g["crop_n_points_downscale_factor"].get<int32_t>();
  params.min_mask_region_area = g["min_mask_region_area"].get<double>();
  params.use_m2m = g["use_m2m"].get<bool>() ? 1 : 0;
  params.multimask_output = g["multimask_output"].get<bool>() ? 1 : 0;

  const std::string checkpoint = fixtures_dir() + "/micro/micro.pt";
  ModelHandle model(sam2rt_model_load(checkpoint.c_str(), nullptr, micro_yaml().c_str()));
  ASSERT_TRUE(model) << sam2rt_last_error();
  AmgHandle amg(sam2rt_amg_new(model.get(), &params));
  ASSERT_TRUE(amg) << sam2rt_last_error();
  const std::string image = fixtures_dir() + "/images/" + golden["image"].get<std::string>();
  AmgResultHandle result(sam2rt_amg_generate_file(amg.get(), image.c_str(), nullptr, nullptr));
  ASSERT_TRUE(result) << sam2rt_last_error();
  const std::vector<sam2rt::AmgMask> masks = masks_of(result.get());
  EXPECT_FALSE(masks.empty());

  sam2rt::ModelSource source;
  source.checkpoint_path = checkpoint;
  source.config_path = micro_yaml();
  sam2rt::AmgParams cpp_params;
  cpp_params.points_per_side = params.points_per_side;
  cpp_params.points_per_batch = params.points_per_batch;
  cpp_params.pred_iou_thresh = params.pred_iou_thresh;
  cpp_params.stability_score_thresh = params.stability_score_thresh;
  cpp_params.stability_score_offset = params.stability_score_offset;
  cpp_params.mask_threshold = params.mask_threshold;
  cpp_params.box_nms_thresh = params.box_nms_thresh;
  cpp_params.crop_n_layers = params.crop_n_layers;
  cpp_params.crop_nms_thresh = params.crop_nms_thresh;
  cpp_params.crop_overlap_ratio = params.crop_overlap_ratio;
  cpp_params.crop_n_points_downscale_factor = params.crop_n_points_downscale_factor;
  cpp_params.min_mask_region_area = params.min_mask_region_area;
  cpp_params.use_m2m = params.use_m2m != 0;
  cpp_params.multimask_output = params.multimask_output != 0;
  const sam2rt::AutomaticMaskGenerator generator(sam2rt::Sam2Model::load(source), cpp_params);
  expect_same_records(masks, generator.generate(sam2rt::decode_image_file(image)));

  ScratchDir scratch("c_api_amg_" + name);
  const std::string candidate = scratch.file("candidate.json"), report = scratch.file("check.txt");
  {
    std::ofstream out(candidate);
    out << sam2rt::amg_report_json(golden["image"].get<std::string>(), golden["image_hw"][0], golden["image_hw"][1],
                                   source.describe(), cpp_params, sam2rt::AmgOutputMode::uncompressed_rle, masks);
  }
  const std::string command = "/usr/bin/python3 " + shell_quote(fixtures_dir() + "/amg/check_amg.py") + " " +
                              shell_quote(golden_path) + " " + shell_quote(candidate) + " -v >" + shell_quote(report) +
                              " 2>&1";
  const int status = std::system(command.c_str());
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << read_text(report);
}

TEST(CApiAmg, MatchesTheGoldenWithNms) { check_golden_case("micro_nms_mt3"); }
TEST(CApiAmg, MatchesTheGoldenWithCrops) { check_golden_case("micro_crops_sm"); }

void count_progress(int64_t done, int64_t total, void* user_data) {
  auto* calls = static_cast<std::vector<std::array<int64_t, 2>>*>(user_data);
  calls->push_back({done, total});
}

TEST(CApiAmg, CustomGridsOnRgbPixelsWithProgress) {
  ModelHandle model = micro_model();
  ASSERT_TRUE(model) << sam2rt_last_error();
  // Two layers: the image gets 5 points, each of the 4 crops 2.
  const int32_t sizes[2] = {5, 2};
  const double grids[14] = {0.1, 0.2, 0.5, 0.5, 0.9, 0.3, 0.25, 0.75, 0.6, 0.1, 0.3, 0.3, 0.7, 0.6};
  sam2rt_amg_params params = sam2rt_amg_params_default();
  params.points_per_side = 0;
  params.num_point_grids = 2;
  params.point_grid_sizes = sizes;
  params.point_grids = grids;
  params.crop_n_layers = 1;
  params.points_per_batch = 3;
  params.pred_iou_thresh = 0.4;
  params.stability_score_thresh = 0.2;
  params.stability_score_offset = 0.05;
  params.mask_threshold = 3.0;
  params.box_nms_thresh = 1.0;
  AmgHandle amg(sam2rt_amg_new(model.get(), &params));
  ASSERT_TRUE(amg) << sam2rt_last_error();
  const sam2rt::RgbImage image = sam2rt::decode_image_file(micro_image());
  std::vector<std::array<int64_t, 2>> calls;
  AmgResultHandle result(
      sam2rt_amg_generate_rgb(amg.get(), image.pixels.data(), image.width, image.height, count_progress, &calls));
  ASSERT_TRUE(result) << sam2rt_last_error();
  const std::vector<sam2rt::AmgMask> masks = masks_of(result.get());
  EXPECT_FALSE(masks.empty());
  ASSERT_FALSE(calls.empty());
  EXPECT_EQ(calls.back(), (std::array<int64_t, 2>{13, 13}));  // 5 + 4 * 2 points

  sam2rt::ModelSource source;
  source.synthetic_salt = 0;
  source.config_path = micro_yaml();
  sam2rt::AmgParams cpp_params;
  cpp_params.points_per_side = std::nullopt;
  cpp_params.point_grids = {{{0.1, 0.2}, {0.5, 0.5}, {0.9, 0.3}, {0.25, 0.75}, {0.6, 0.1}}, {{0.3, 0.3}, {0.7, 0.6}}};
  cpp_params.crop_n_layers = 1;
  cpp_params.points_per_batch = 3;
  cpp_params.pred_iou_thresh = 0.4;
  cpp_params.stability_score_thresh = 0.2;
  cpp_params.stability_score_offset = 0.05;
  cpp_params.mask_threshold = 3.0;
  cpp_params.box_nms_thresh = 1.0;
  const sam2rt::AutomaticMaskGenerator generator(sam2rt::Sam2Model::load(source), cpp_params);
  expect_same_records(masks, generator.generate(image));
}

TEST(CApiAmg, RefusesBadArgumentsWithoutCrashing) {
  ModelHandle model = micro_model();
  ASSERT_TRUE(model) << sam2rt_last_error();
  EXPECT_EQ(sam2rt_amg_new(nullptr, nullptr), nullptr);
  EXPECT_NE(std::string(sam2rt_last_error()).find("NULL"), std::string::npos) << sam2rt_last_error();
  auto refused = [&](const sam2rt_amg_params& params, const std::string& fragment) {
    EXPECT_EQ(sam2rt_amg_new(model.get(), &params), nullptr);
    EXPECT_NE(std::string(sam2rt_last_error()).find(fragment), std::string::npos)
        << "'" << sam2rt_last_error() << "' does not mention '" << fragment << "'";
  };
  sam2rt_amg_params p = sam2rt_amg_params_default();
  p.points_per_side = -3;
  refused(p, "points_per_side");
  p = sam2rt_amg_params_default();
  p.pred_iou_thresh = 1.5;
  refused(p, "pred_iou_thresh");
  p = sam2rt_amg_params_default();
  p.crop_overlap_ratio = std::numeric_limits<double>::quiet_NaN();
  refused(p, "crop_overlap_ratio");
  p = sam2rt_amg_params_default();
  p.points_per_side = 0;
  refused(p, "exactly one");
  p.num_point_grids = -1;
  refused(p, "num_point_grids");
  p.num_point_grids = 1;
  refused(p, "NULL");
  const int32_t negative = -2;
  const double point[2] = {0.5, 0.5};
  p.point_grid_sizes = &negative;
  p.point_grids = point;
  refused(p, "negative");
  const int32_t one = 1;
  const double outside[2] = {0.5, 1.5};
  p.point_grid_sizes = &one;
  p.point_grids = outside;
  refused(p, "outside [0, 1]");
  p.points_per_side = 4;
  p.point_grids = point;
  refused(p, "exactly one");

  p = sam2rt_amg_params_default();
  p.points_per_side = 2;
  AmgHandle amg(sam2rt_amg_new(model.get(), &p));
  ASSERT_TRUE(amg) << sam2rt_last_error();
  EXPECT_EQ(sam2rt_amg_generate_file(nullptr, micro_image().c_str(), nullptr, nullptr), nullptr);
  EXPECT_EQ(sam2rt_amg_generate_file(amg.get(), nullptr, nullptr, nullptr), nullptr);
  EXPECT_EQ(sam2rt_amg_generate_file(amg.get(), "/nonexistent/photo.png", nullptr, nullptr), nullptr);
  EXPECT_NE(std::string(sam2rt_last_error()).find("/nonexistent/photo.png"), std::string::npos) << sam2rt_last_error();
  const uint8_t pixel[3] = {1, 2, 3};
  EXPECT_EQ(sam2rt_amg_generate_rgb(amg.get(), nullptr, 1, 1, nullptr, nullptr), nullptr);
  EXPECT_EQ(sam2rt_amg_generate_rgb(amg.get(), pixel, 0, 1, nullptr, nullptr), nullptr);
  EXPECT_EQ(sam2rt_amg_generate_rgb(nullptr, pixel, 1, 1, nullptr, nullptr), nullptr);

  EXPECT_EQ(sam2rt_amg_result_count(nullptr), -1);
  sam2rt_amg_mask record{};
  expect_error(sam2rt_amg_result_get(nullptr, 0, &record), "NULL");
  uint8_t buffer[4] = {};
  expect_error(sam2rt_amg_result_decode_mask(nullptr, 0, buffer, 4), "NULL");

  // A real result: indices outside [0, count), NULL outputs, a short buffer.
  p.pred_iou_thresh = 0;
  p.stability_score_thresh = 0;
  p.box_nms_thresh = 1.0;
  AmgHandle keeps_all(sam2rt_amg_new(model.get(), &p));
  ASSERT_TRUE(keeps_all) << sam2rt_last_error();
  AmgResultHandle result(sam2rt_amg_generate_file(keeps_all.get(), micro_image().c_str(), nullptr, nullptr));
  ASSERT_TRUE(result) << sam2rt_last_error();
  const int64_t count = sam2rt_amg_result_count(result.get());
  ASSERT_GT(count, 0);
  expect_error(sam2rt_amg_result_get(result.get(), count, &record), "outside");
  expect_error(sam2rt_amg_result_get(result.get(), -1, &record), "outside");
  expect_error(sam2rt_amg_result_get(result.get(), 0, nullptr), "NULL");
  expect_error(sam2rt_amg_result_decode_mask(result.get(), 0, nullptr, 288 * 112), "NULL");
  expect_error(sam2rt_amg_result_decode_mask(result.get(), 0, buffer, 4), "mask_bytes");
  expect_error(sam2rt_amg_result_decode_mask(result.get(), count, buffer, 4), "outside");
  sam2rt_amg_result_free(nullptr);
  sam2rt_amg_free(nullptr);
}

}  // namespace
