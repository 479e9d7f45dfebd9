#include "api/masks_overlay.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>

#include "core/error.h"

namespace sam2rt {

namespace {

// Well-separated hues: the golden-angle walk around the colour wheel.
std::array<float, 3> mask_colour(size_t index) {
  const double hue = std::fmod(static_cast<double>(index) * 0.618033988749895, 1.0) * 6.0;
  const double f = hue - std::floor(hue);
  const double v = 0.95, s = 0.75;
  const double p = v * (1 - s), q = v * (1 - s * f), t = v * (1 - s * (1 - f));
  double r = v, g = t, b = p;
  switch (static_cast<int>(hue)) {
    case 1: r = q, g = v, b = p; break;
    case 2: r = p, g = v, b = t; break;
    case 3: r = p, g = q, b = v; break;
    case 4: r = t, g = p, b = v; break;
    case 5: r = v, g = p, b = q; break;
    default: break;
  }
  return {static_cast<float>(r * 255), static_cast<float>(g * 255), static_cast<float>(b * 255)};
}

}  // namespace

RgbImage render_masks_overlay(const RgbImage& photo, const std::vector<UncompressedRle>& masks) {
  RgbImage out = photo;
  const int64_t w = photo.width, h = photo.height;
  std::vector<size_t> order(masks.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return rle_area(masks[a]) > rle_area(masks[b]); });
  constexpr float kAlpha = 0.55f;
  for (const size_t index : order) {
    const UncompressedRle& rle = masks[index];
    if (rle.height != h || rle.width != w) {
      throw Error("overlay: mask " + std::to_string(index) + " is " + std::to_string(rle.width) + "x" +
                  std::to_string(rle.height) + " but the photo is " + std::to_string(w) + "x" + std::to_string(h));
    }
    const std::vector<uint8_t> mask = decode_rle(rle);
    const std::array<float, 3> colour = mask_colour(index);
    auto inside = [&](int64_t x, int64_t y) { return x >= 0 && y >= 0 && x < w && y < h && mask[y * w + x]; };
    for (int64_t y = 0; y < h; ++y) {
      for (int64_t x = 0; x < w; ++x) {
        if (!mask[y * w + x]) continue;
        uint8_t* pixel = &out.pixels[static_cast<size_t>((y * w + x) * 3)];
        const bool edge = !inside(x - 1, y) || !inside(x + 1, y) || !inside(x, y - 1) || !inside(x, y + 1);
        for (int c = 0; c < 3; ++c) {
          const float tinted = edge ? colour[c] * 0.6f : (1 - kAlpha) * pixel[c] + kAlpha * colour[c];
          pixel[c] = static_cast<uint8_t>(std::lround(std::clamp(tinted, 0.0f, 255.0f)));
        }
      }
    }
  }
  return out;
}

}  // namespace sam2rt
