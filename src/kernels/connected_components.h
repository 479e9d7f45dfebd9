#pragma once

#include <cstdint>
#include <vector>

namespace sam2rt {

// For each pixel of a binary image (row-major, nonzero = set) the area of its
// 8-connected component, 0 for unset pixels: the (labels > 0, areas) contract of
// sam2.utils.misc.get_connected_components, whose CUDA kernel the official
// predictor's hole filling needs.
std::vector<int32_t> component_areas(const uint8_t* mask, int64_t height, int64_t width);

// Plain flood fill with an explicit stack: the reference the union-find version is tested against.
std::vector<int32_t> component_areas_reference(const uint8_t* mask, int64_t height, int64_t width);

}  // namespace sam2rt
