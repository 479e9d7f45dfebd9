#pragma once

#include <string>

#include "core/tensor.h"
#include "io/image.h"

namespace sam2rt::python {

// Which resize turns the photo into the encoder input.
enum class Preprocessing {
  pillow,       // the model card's Pillow BILINEAR on uint8 (the engine's default, the goldens' input)
  torchvision,  // the official SAM2ImagePredictor's antialiased float resize
};

Preprocessing parse_preprocessing(const std::string& name);  // ValueError for other names
Tensor preprocess(const RgbImage& image, int image_size, Preprocessing method);

}  // namespace sam2rt::python
