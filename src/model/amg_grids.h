#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace sam2rt {

// sam2.utils.amg.build_point_grid: n x n points (x, y) in [0, 1], x fastest,
// at numpy's linspace(1/(2n), 1 - 1/(2n), n) (i * step + start, last = stop).
std::vector<std::array<double, 2>> build_point_grid(int n_per_side);

// build_all_layer_point_grids: layer i has int(n_per_side / scale_per_layer^i) points per side.
std::vector<std::vector<std::array<double, 2>>> build_all_layer_point_grids(int n_per_side, int n_layers,
                                                                           int scale_per_layer);

// A crop of the image, XYXY in pixels (x1, y1 exclusive), and its layer.
struct CropBox {
  int64_t x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  int layer = 0;
  int64_t width() const { return x1 - x0; }
  int64_t height() const { return y1 - y0; }
};

// generate_crop_boxes: the whole image, then per layer i (1-based) 2^i x 2^i
// overlapping crops, x0-major.
std::vector<CropBox> generate_crop_boxes(int64_t height, int64_t width, int n_layers, double overlap_ratio);

}  // namespace sam2rt
