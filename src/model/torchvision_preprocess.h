#pragma once

#include "core/tensor.h"
#include "io/image.h"

namespace sam2rt {

// The official SAM2ImagePredictor's own preprocessing (SAM2Transforms):
// torchvision ToTensor (x / 255 in float32), Resize((S, S)) on the float tensor
// (bilinear, antialiased, no uint8 rounding), then Normalize with the ImageNet
// mean/std. Differs from preprocess_image (the model card's Pillow path) by up
// to about 1/255 before normalisation. Returns [1, 3, S, S] (NCHW).
Tensor preprocess_image_torchvision(const RgbImage& image, int image_size);

}  // namespace sam2rt
