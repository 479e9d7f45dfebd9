#include "model/preprocess.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "core/error.h"
#include "io/image.h"
#include "io/safetensors.h"
#include "test_paths.h"

namespace sam2rt {
namespace {

std::string image_path(const std::string& name) {
  return testing::fixtures_dir() + "/images/" + name;
}

int64_t bitwise_differences(const float* a, const float* b, int64_t count) {
  int64_t differing = 0;
  for (int64_t i = 0; i < count; ++i) differing += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
  return differing;
}

TEST(Preprocess, MicroInputBitExact) {
  const Tensor input = preprocess_image(decode_image_file(image_path("chelsea_288x112.png")), 256);
  const SafetensorsFile golden =
      read_safetensors(testing::fixtures_dir() + "/micro/golden.safetensors");
  const Tensor& expected = golden.tensors.at("input");
  ASSERT_EQ(input.shape(), expected.shape());
  EXPECT_EQ(bitwise_differences(input.data(), expected.data(), input.numel()), 0)
      << "of " << input.numel();
}

TEST(Preprocess, TinyInputDecimatedBitExact) {
  const Tensor input = preprocess_image(decode_image_file(image_path("astronaut.png")), 1024);
  ASSERT_EQ(input.shape(), (Shape{1, 3, 1024, 1024}));
  const SafetensorsFile golden =
      read_safetensors(testing::fixtures_dir() + "/tiny/golden.safetensors");
  const Tensor& expected = golden.tensors.at("input.dec32");
  ASSERT_EQ(expected.shape(), (Shape{1, 3, 32, 32}));
  Tensor decimated({1, 3, 32, 32});
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < 32; ++y) {
      for (int x = 0; x < 32; ++x) {
        decimated[(c * 32 + y) * 32 + x] =
            input[(static_cast<int64_t>(c) * 1024 + y * 32) * 1024 + x * 32];
      }
    }
  }
  EXPECT_EQ(bitwise_differences(decimated.data(), expected.data(), decimated.numel()), 0);
}

// One value per channel, checked against the formula spelled out in float32.
TEST(Preprocess, NormalisesPerChannelNchw) {
  RgbImage image;
  image.width = 3;
  image.height = 2;
  for (int i = 0; i < 6; ++i) image.pixels.insert(image.pixels.end(), {0, 128, 255});
  const Tensor input = preprocess_image(image, 4);
  ASSERT_EQ(input.shape(), (Shape{1, 3, 4, 4}));
  const float expected[3] = {(0.0f / 255.0f - 0.485f) / 0.229f, (128.0f / 255.0f - 0.456f) / 0.224f,
                             (255.0f / 255.0f - 0.406f) / 0.225f};
  for (int c = 0; c < 3; ++c) {
    for (int i = 0; i < 16; ++i) ASSERT_EQ(input[c * 16 + i], expected[c]) << c << " " << i;
  }
}

TEST(Preprocess, RejectsMalformedImage) {
  RgbImage image;
  image.width = 2;
  image.height = 2;
  image.pixels.assign(11, 0);
  EXPECT_THROW(preprocess_image(image, 8), Error);
  image.pixels.assign(12, 0);
  EXPECT_THROW(preprocess_image(image, 0), Error);
  EXPECT_NO_THROW(preprocess_image(image, 8));
}

}  // namespace
}  // namespace sam2rt
