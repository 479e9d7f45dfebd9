#include "model/preprocess.h"

#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/pillow_resize.h"

namespace sam2rt {

namespace {

// Resizes with Pillow's `filter` and normalises per channel in float32 as
// ((x / 255) - mean) / std. Both official paths agree on the arithmetic after
// the resize: torchvision's ToTensor divides in float32, the video loader
// divides in float64 and rounds the quotient to float32; the two give the same
// float32 for every x in 0..255 (a float64 quotient rounded again to float32
// equals the float32 quotient, as 53 >= 2 * 24 + 2 bits; the tests check all
// 256 values).
Tensor resize_and_normalize(const RgbImage& image, int image_size, PillowFilter filter,
                            const char* caller) {
  if (image.width <= 0 || image.height <= 0 ||
      image.pixels.size() != static_cast<size_t>(image.width) * image.height * 3) {
    throw Error(std::string(caller) + ": image of " + std::to_string(image.width) + "x" +
                std::to_string(image.height) + " pixels holds " +
                std::to_string(image.pixels.size()) + " bytes, not width*height*3");
  }
  if (image_size <= 0) {
    throw Error(std::string(caller) + ": image_size must be positive, got " +
                std::to_string(image_size));
  }
  const size_t plane = static_cast<size_t>(image_size) * image_size;
  std::vector<uint8_t> resized(plane * 3);
  pillow_resize(image.pixels.data(), image.width, image.height, 3, resized.data(), image_size,
                image_size, filter);

  // Divisions, not multiplications by reciprocals: x * (1/255) rounds
  // differently in about a third of the values.
  constexpr float kMean[3] = {0.485f, 0.456f, 0.406f};
  constexpr float kStd[3] = {0.229f, 0.224f, 0.225f};
  Tensor input({1, 3, image_size, image_size});
  for (int c = 0; c < 3; ++c) {
    float* out = input.data() + c * plane;
    for (size_t i = 0; i < plane; ++i) {
      out[i] = (static_cast<float>(resized[3 * i + c]) / 255.0f - kMean[c]) / kStd[c];
    }
  }
  return input;
}

}  // namespace

Tensor preprocess_image(const RgbImage& image, int image_size) {
  return resize_and_normalize(image, image_size, PillowFilter::bilinear, "preprocess_image");
}

Tensor preprocess_video_frame(const RgbImage& frame, int image_size) {
  return resize_and_normalize(frame, image_size, PillowFilter::bicubic, "preprocess_video_frame");
}

}  // namespace sam2rt
