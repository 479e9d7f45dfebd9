#include "model/torchvision_preprocess.h"

#include <gtest/gtest.h>

#include <string>

#include "core/tensor_compare.h"
#include "io/image.h"
#include "io/safetensors.h"
#include "model/preprocess.h"
#include "test_paths.h"

namespace sam2rt {
namespace {

// The official predictor's own preprocessing, made by torchvision 0.14.1 (fixture README).
void expect_matches_torchvision(const std::string& image, const std::string& golden, int size) {
  const std::string dir = testing::fixtures_dir() + "/images/";
  const Tensor input = preprocess_image_torchvision(decode_image_file(dir + image), size);
  const Tensor expected = read_safetensors(dir + golden).tensors.at("input");
  ASSERT_EQ(input.numel(), expected.numel());
  EXPECT_LE(compare_tensors(input.reshaped(expected.shape()), expected).max_abs_err, 1e-5);
  // It is a different path from the model card's Pillow resize: the comparison has teeth.
  const Tensor pillow = preprocess_image(decode_image_file(dir + image), size);
  EXPECT_GT(compare_tensors(pillow.reshaped(expected.shape()), expected).max_abs_err, 1e-3);
}

TEST(TorchvisionPreprocess, DownscaleMatchesOfficialPredictor) {
  expect_matches_torchvision("coffee_1500x1100.png", "coffee_1500x1100_torchvision_1024.safetensors", 1024);
}

TEST(TorchvisionPreprocess, MixedScaleMatchesOfficialPredictor) {
  expect_matches_torchvision("chelsea_288x112.png", "chelsea_288x112_torchvision_256.safetensors", 256);
}

TEST(TorchvisionPreprocess, RefusesInconsistentImages) {
  RgbImage image;
  image.width = 4;
  image.height = 4;
  image.pixels.resize(10);
  EXPECT_THROW(preprocess_image_torchvision(image, 32), std::runtime_error);
}

}  // namespace
}  // namespace sam2rt
