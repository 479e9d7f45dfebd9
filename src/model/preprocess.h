#pragma once

#include "core/tensor.h"
#include "io/image.h"

namespace sam2rt {

// The model card's preprocessing, bit for bit: Pillow BILINEAR resize to
// image_size x image_size, then per channel float32 ((x / 255) - mean) / std
// (torchvision ToTensor + Normalize) with the ImageNet mean/std.
// Returns [1, 3, image_size, image_size] (NCHW).
Tensor preprocess_image(const RgbImage& image, int image_size);

}  // namespace sam2rt
