#include "model/torchvision_preprocess.h"

#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/antialias_resize.h"

namespace sam2rt {

Tensor preprocess_image_torchvision(const RgbImage& image, int image_size) {
  if (image.width <= 0 || image.height <= 0 ||
      image.pixels.size() != static_cast<size_t>(image.width) * image.height * 3) {
    throw Error("preprocess_image_torchvision: image of " + std::to_string(image.width) + "x" +
                std::to_string(image.height) + " pixels holds " + std::to_string(image.pixels.size()) +
                " bytes, not width*height*3");
  }
  if (image_size <= 0) {
    throw Error("preprocess_image_torchvision: image_size must be positive, got " + std::to_string(image_size));
  }
  // ToTensor: HWC uint8 -> CHW float32, divided (not multiplied by 1/255) as torchvision does.
  const size_t src_plane = static_cast<size_t>(image.width) * image.height;
  std::vector<float> chw(src_plane * 3);
  for (size_t i = 0; i < src_plane; ++i) {
    for (size_t c = 0; c < 3; ++c) chw[c * src_plane + i] = static_cast<float>(image.pixels[3 * i + c]) / 255.0f;
  }
  Tensor input = Tensor::uninitialized({1, 3, image_size, image_size});
  resize_bilinear_antialias(chw.data(), 3, image.width, image.height, input.data(), image_size, image_size);

  constexpr float kMean[3] = {0.485f, 0.456f, 0.406f};
  constexpr float kStd[3] = {0.229f, 0.224f, 0.225f};
  const size_t plane = static_cast<size_t>(image_size) * image_size;
  for (size_t c = 0; c < 3; ++c) {
    float* values = input.data() + c * plane;
    for (size_t i = 0; i < plane; ++i) values[i] = (values[i] - kMean[c]) / kStd[c];
  }
  return input;
}

}  // namespace sam2rt
