#include "api/sam2rt_c.h"

#include <gtest/gtest.h>

#include <string>

#include "test_paths.h"

namespace {

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

}  // namespace
