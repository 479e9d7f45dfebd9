// The image encoder on Vulkan through the C API (lavapipe in CI): a model made
// with sam2rt_model_synthetic_on_device(..., "vulkan:0") predicts the masks of
// the CPU model, within the micro goldens' tolerance on the logits.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "api/sam2rt_c.h"
#include "test_paths.h"

namespace sam2rt::testing {
namespace {

#ifdef SAM2RT_VULKAN

struct Prediction {
  std::vector<float> logits;
  std::vector<float> iou;
  float object_score_logit = 0;
};

Prediction predict_on(const char* device) {
  const std::string yaml = fixtures_dir() + "/micro/sam2.1_micro.yaml";
  const std::string image = fixtures_dir() + "/images/chelsea_288x112.png";
  std::unique_ptr<sam2rt_model, void (*)(sam2rt_model*)> model(
      sam2rt_model_synthetic_on_device(0, nullptr, yaml.c_str(), device), sam2rt_model_free);
  EXPECT_NE(model, nullptr) << device << ": " << sam2rt_last_error();
  if (!model) return {};
  std::unique_ptr<sam2rt_predictor, void (*)(sam2rt_predictor*)> predictor(sam2rt_predictor_new(model.get()),
                                                                             sam2rt_predictor_free);
  EXPECT_EQ(sam2rt_predictor_set_image_file(predictor.get(), image.c_str()), 0) << sam2rt_last_error();
  const float point[2] = {110.0f, 41.0f};
  const int32_t label = 1;
  sam2rt_masks masks{};
  EXPECT_EQ(sam2rt_predict(predictor.get(), point, &label, 1, nullptr, 1, &masks), 0) << sam2rt_last_error();
  Prediction out;
  if (masks.logits) {
    out.logits.assign(masks.logits, masks.logits + static_cast<size_t>(masks.num_masks) * masks.width * masks.height);
  }
  out.iou.assign(masks.iou_predictions, masks.iou_predictions + masks.num_masks);
  out.object_score_logit = masks.object_score_logit;
  sam2rt_masks_free(&masks);
  return out;
}

TEST(VulkanCApi, AModelOnVulkanPredictsTheCpuMasks) {
  const Prediction cpu = predict_on("cpu"), vulkan = predict_on("vulkan:0");
  ASSERT_EQ(vulkan.logits.size(), cpu.logits.size());
  ASSERT_FALSE(cpu.logits.empty());
  double max_abs = 0;
  for (size_t i = 0; i < cpu.logits.size(); ++i) {
    max_abs = std::max(max_abs, static_cast<double>(std::fabs(vulkan.logits[i] - cpu.logits[i])));
  }
  EXPECT_LE(max_abs, 1e-4);
  for (size_t i = 0; i < cpu.iou.size(); ++i) EXPECT_NEAR(vulkan.iou[i], cpu.iou[i], 1e-4) << i;
  EXPECT_NEAR(vulkan.object_score_logit, cpu.object_score_logit, 1e-4);
}

#endif

}  // namespace
}  // namespace sam2rt::testing
