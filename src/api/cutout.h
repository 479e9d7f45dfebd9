#pragma once

#include <cstdint>
#include <vector>

#include "io/image.h"

namespace sam2rt {

// An object cut out of the photo: RGBA pixels of the mask's bounding box, alpha
// 255 on the mask and 0 (with black colour) elsewhere.
struct Cutout {
  int x0 = 0, y0 = 0;  // where the box starts in the photo
  int width = 0, height = 0;
  std::vector<uint8_t> rgba;
};

// mask: photo.width * photo.height bytes, nonzero = object. Error for an empty mask
// (there is nothing to cut out) or a mask of another size.
Cutout cut_out(const RgbImage& photo, const std::vector<uint8_t>& mask);

}  // namespace sam2rt
