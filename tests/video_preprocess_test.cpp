// The official video loader's per-frame preprocessing (Pillow's default BICUBIC
// resize, then the float normalisation) against goldens Pillow 9.4 and numpy
// wrote: tools/refgen/video/pillow_bicubic_goldens.py.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/image.h"
#include "io/safetensors.h"
#include "kernels/pillow_resize.h"
#include "model/preprocess.h"

namespace sam2rt {
namespace {

std::string frames_dir() { return std::string(SAM2RT_SOURCE_DIR) + "/tests/video/frames/"; }

RgbImage bicubic(const RgbImage& image, int width, int height) {
  RgbImage out{width, height, std::vector<uint8_t>(static_cast<size_t>(width) * height * 3)};
  pillow_resize(image.pixels.data(), image.width, image.height, 3, out.pixels.data(), width,
                height, PillowFilter::bicubic);
  return out;
}

// Reports the largest byte difference and how many bytes differ.
void expect_identical(const RgbImage& got, const RgbImage& want, const std::string& what) {
  ASSERT_EQ(got.width, want.width) << what;
  ASSERT_EQ(got.height, want.height) << what;
  ASSERT_EQ(got.pixels.size(), want.pixels.size()) << what;
  int max_difference = 0;
  size_t differing = 0;
  for (size_t i = 0; i < got.pixels.size(); ++i) {
    const int difference = std::abs(int{got.pixels[i]} - int{want.pixels[i]});
    max_difference = std::max(max_difference, difference);
    differing += difference != 0;
  }
  EXPECT_EQ(max_difference, 0) << what << ": " << differing << " bytes differ";
}

uint64_t fnv1a64(const std::vector<uint8_t>& bytes) {
  uint64_t hash = 0xCBF29CE484222325ull;
  for (uint8_t byte : bytes) hash = (hash ^ byte) * 0x100000001B3ull;
  return hash;
}

TEST(VideoPreprocess, BicubicResizeOfAJpegFrameMatchesPillow) {
  const RgbImage frame = decode_image_file(frames_dir() + "chelsea_320x180.jpg");
  for (int size : {256, 64}) {
    const std::string golden = "chelsea_320x180_bicubic_" + std::to_string(size) + ".png";
    expect_identical(bicubic(frame, size, size), decode_image_file(frames_dir() + golden), golden);
  }
}

TEST(VideoPreprocess, BicubicResizeAtTheModelSizeMatchesPillow) {
  const RgbImage frame = decode_image_file(frames_dir() + "chelsea_320x180.jpg");
  std::ifstream file(frames_dir() + "chelsea_320x180_bicubic_1024.json");
  const nlohmann::json golden = nlohmann::json::parse(file);
  const RgbImage resized = bicubic(frame, 1024, 1024);
  uint64_t byte_sum = 0;
  for (uint8_t byte : resized.pixels) byte_sum += byte;
  char hash[17];
  std::snprintf(hash, sizeof(hash), "%016llx",
                static_cast<unsigned long long>(fnv1a64(resized.pixels)));
  EXPECT_EQ(byte_sum, golden.at("byte_sum").get<uint64_t>());
  EXPECT_EQ(std::string(hash), golden.at("fnv1a64").get<std::string>());
}

TEST(VideoPreprocess, BicubicOvershootIsClippedAsPillowDoes) {
  const RgbImage noise = decode_image_file(frames_dir() + "noise_37x23.png");
  for (auto [width, height] : {std::pair{64, 64}, std::pair{8, 8}, std::pair{37, 5}}) {
    const std::string golden = "noise_37x23_bicubic_" + std::to_string(width) + "x" +
                               std::to_string(height) + ".png";
    expect_identical(bicubic(noise, width, height), decode_image_file(frames_dir() + golden),
                     golden);
  }
}

// numpy's float64 x / 255.0 stored as float32, then float32 -= mean, /= std:
// every uint8 value of every channel, bit for bit. At the frame's own size the
// resize is a copy (as Pillow's), so the tensor is the normalisation alone.
TEST(VideoPreprocess, NormalizationMatchesTheOfficialLoaderForEveryValue) {
  const SafetensorsFile golden = read_safetensors(frames_dir() + "normalized_values.safetensors");
  const Tensor& table = golden.tensors.at("normalized_values");
  ASSERT_EQ(table.shape(), (Shape{3, 256}));
  RgbImage ramp{16, 16, std::vector<uint8_t>(16 * 16 * 3)};
  for (size_t i = 0; i < 256; ++i) {
    for (size_t c = 0; c < 3; ++c) ramp.pixels[3 * i + c] = static_cast<uint8_t>(i);
  }
  const Tensor input = preprocess_video_frame(ramp, 16);
  ASSERT_EQ(input.shape(), (Shape{1, 3, 16, 16}));
  for (int c = 0; c < 3; ++c) {
    for (int i = 0; i < 256; ++i) {
      EXPECT_EQ(input.data()[c * 256 + i], table.data()[c * 256 + i])
          << "channel " << c << ", value " << i;
    }
  }
}

// The whole [1, 3, 256, 256] tensor of a JPEG frame: Pillow's resize, then the
// official normalisation of each value.
TEST(VideoPreprocess, FrameTensorIsPillowBicubicThenTheOfficialNormalization) {
  const SafetensorsFile golden = read_safetensors(frames_dir() + "normalized_values.safetensors");
  const float* table = golden.tensors.at("normalized_values").data();
  const RgbImage resized = decode_image_file(frames_dir() + "chelsea_320x180_bicubic_256.png");
  const Tensor input =
      preprocess_video_frame(decode_image_file(frames_dir() + "chelsea_320x180.jpg"), 256);
  ASSERT_EQ(input.shape(), (Shape{1, 3, 256, 256}));
  size_t mismatches = 0;
  for (size_t c = 0; c < 3; ++c) {
    for (size_t i = 0; i < 256 * 256; ++i) {
      mismatches += input.data()[c * 256 * 256 + i] != table[c * 256 + resized.pixels[3 * i + c]];
    }
  }
  EXPECT_EQ(mismatches, 0u);
}

TEST(VideoPreprocess, RejectsAnInconsistentFrame) {
  EXPECT_THROW(preprocess_video_frame(RgbImage{4, 4, std::vector<uint8_t>(10)}, 8), Error);
  EXPECT_THROW(preprocess_video_frame(RgbImage{1, 1, std::vector<uint8_t>(3)}, 0), Error);
}

// The official loader opens frames with Image.open alone: a JPEG's EXIF
// orientation is not applied (the image predictor's exif_transpose is).
TEST(VideoPreprocess, FramesKeepTheStoredOrientation) {
  const std::string path = frames_dir() + "exif_orientation_6.jpg";
  const RgbImage stored = decode_image_file(path, kDefaultMaxImagePixels, ExifOrientation::ignore);
  expect_identical(stored, decode_image_file(frames_dir() + "exif_orientation_6_decoded.png"),
                   "exif_orientation_6.jpg");
  const RgbImage turned = decode_image_file(path);
  EXPECT_EQ(turned.width, stored.height);
  EXPECT_EQ(turned.height, stored.width);
}

}  // namespace
}  // namespace sam2rt
