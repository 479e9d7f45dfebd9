#pragma once

#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <vector>

namespace sam2rt {

// One connected part of a mask as polygons in pixel coordinates (the centres of
// the boundary pixels): its outer contour and the contours of its holes.
struct MaskPolygon {
  std::vector<std::array<int, 2>> exterior;
  std::vector<std::vector<std::array<int, 2>>> holes;
};

// The outer contours of the mask's 8-connected parts and their holes
// (OpenCV's findContours, two-level hierarchy), each simplified by
// Douglas-Peucker with `tolerance` pixels (0 keeps every boundary pixel).
// mask: width * height bytes, nonzero = set.
std::vector<MaskPolygon> mask_polygons(const std::vector<uint8_t>& mask, int width, int height, double tolerance);

// The outer contours of the mask's 8-connected parts (no holes), each simplified
// by Douglas-Peucker with epsilon_factor times its own length, as the SAM backends
// of labelling tools call cv2.approxPolyDP with epsilon_factor * cv2.arcLength.
std::vector<std::vector<std::array<int, 2>>> mask_outer_contours(const std::vector<uint8_t>& mask, int width,
                                                                 int height, double epsilon_factor);

// [{"exterior": [[x, y], ...], "holes": [[[x, y], ...], ...]}, ...]
nlohmann::json polygons_json(const std::vector<MaskPolygon>& polygons);

}  // namespace sam2rt
