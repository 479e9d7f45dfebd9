#include "api/binary_mask.h"

#include <algorithm>

namespace sam2rt {

std::vector<uint8_t> threshold_mask(const Tensor& masks, int64_t index, float threshold) {
  const int64_t plane = masks.dim(1) * masks.dim(2);
  std::vector<uint8_t> out(static_cast<size_t>(plane));
  const float* logits = masks.data() + index * plane;
  for (int64_t i = 0; i < plane; ++i) out[static_cast<size_t>(i)] = logits[i] > threshold ? 255 : 0;
  return out;
}

MaskExtent mask_extent(const std::vector<uint8_t>& mask, int width, int height) {
  MaskExtent extent;
  int x0 = width, y0 = height, x1 = -1, y1 = -1;
  for (int y = 0; y < height; ++y) {
    const uint8_t* row = mask.data() + static_cast<size_t>(y) * static_cast<size_t>(width);
    for (int x = 0; x < width; ++x) {
      if (!row[x]) continue;
      ++extent.area;
      x0 = std::min(x0, x);
      x1 = std::max(x1, x);
      y0 = std::min(y0, y);
      y1 = std::max(y1, y);
    }
  }
  if (extent.area) extent.bbox = nlohmann::json::array({x0, y0, x1 + 1, y1 + 1});
  return extent;
}

}  // namespace sam2rt
