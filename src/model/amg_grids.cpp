#include "model/amg_grids.h"

#include <algorithm>
#include <cmath>

namespace sam2rt {

std::vector<std::array<double, 2>> build_point_grid(int n_per_side) {
  std::vector<double> side(static_cast<size_t>(std::max(n_per_side, 0)));
  const double offset = 1.0 / (2.0 * n_per_side);
  const double start = offset, stop = 1.0 - offset;
  // numpy.linspace: step = (stop - start) / (n - 1), y = i * step + start, y[-1] = stop.
  if (n_per_side == 1) {
    side[0] = start;
  } else if (n_per_side > 1) {
    const double step = (stop - start) / static_cast<double>(n_per_side - 1);
    for (int i = 0; i < n_per_side; ++i) side[static_cast<size_t>(i)] = static_cast<double>(i) * step + start;
    side.back() = stop;
  }
  std::vector<std::array<double, 2>> points;
  points.reserve(side.size() * side.size());
  for (const double y : side) {
    for (const double x : side) points.push_back({x, y});
  }
  return points;
}

std::vector<std::vector<std::array<double, 2>>> build_all_layer_point_grids(int n_per_side, int n_layers,
                                                                           int scale_per_layer) {
  std::vector<std::vector<std::array<double, 2>>> grids;
  for (int i = 0; i <= n_layers; ++i) {
    const int n_points = static_cast<int>(n_per_side / std::pow(static_cast<double>(scale_per_layer), i));
    grids.push_back(build_point_grid(n_points));
  }
  return grids;
}

std::vector<CropBox> generate_crop_boxes(int64_t height, int64_t width, int n_layers, double overlap_ratio) {
  std::vector<CropBox> boxes{{0, 0, width, height, 0}};
  const int64_t short_side = std::min(height, width);
  auto crop_len = [](int64_t orig_len, int64_t n_crops, int64_t overlap) {
    return static_cast<int64_t>(
        std::ceil(static_cast<double>(overlap * (n_crops - 1) + orig_len) / static_cast<double>(n_crops)));
  };
  for (int layer = 0; layer < n_layers; ++layer) {
    const int64_t n_crops = int64_t{1} << (layer + 1);
    const auto overlap = static_cast<int64_t>(overlap_ratio * static_cast<double>(short_side) *
                                              (2.0 / static_cast<double>(n_crops)));
    const int64_t crop_w = crop_len(width, n_crops, overlap);
    const int64_t crop_h = crop_len(height, n_crops, overlap);
    for (int64_t i = 0; i < n_crops; ++i) {
      const int64_t x0 = (crop_w - overlap) * i;
      for (int64_t j = 0; j < n_crops; ++j) {
        const int64_t y0 = (crop_h - overlap) * j;
        boxes.push_back({x0, y0, std::min(x0 + crop_w, width), std::min(y0 + crop_h, height), layer + 1});
      }
    }
  }
  return boxes;
}

}  // namespace sam2rt
