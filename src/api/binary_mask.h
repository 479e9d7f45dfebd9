#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace sam2rt {

// Plane `index` of [M, H, W] mask logits as an 8-bit mask: 255 where logit > threshold, else 0.
std::vector<uint8_t> threshold_mask(const Tensor& masks, int64_t index, float threshold);

// Foreground pixel count and bounding box [x0, y0, x1, y1) (null when empty), as the
// `segment --json` report and the serve API give them.
struct MaskExtent {
  int64_t area = 0;
  nlohmann::json bbox = nullptr;
};

MaskExtent mask_extent(const std::vector<uint8_t>& mask, int width, int height);

}  // namespace sam2rt
