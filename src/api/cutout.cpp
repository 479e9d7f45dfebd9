#include "api/cutout.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace sam2rt {

Cutout cut_out(const RgbImage& photo, const std::vector<uint8_t>& mask) {
  const int w = photo.width, h = photo.height;
  if (mask.size() != static_cast<size_t>(w) * static_cast<size_t>(h)) {
    throw Error("cut-out: the mask does not have the photo's " + std::to_string(w) + "x" + std::to_string(h) +
                " pixels");
  }
  int x0 = w, y0 = h, x1 = -1, y1 = -1;
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      if (!mask[static_cast<size_t>(y) * static_cast<size_t>(w) + x]) continue;
      x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
    }
  }
  if (x1 < 0) throw Error("cut-out: the mask is empty, there is no object to cut out");
  Cutout c{x0, y0, x1 - x0 + 1, y1 - y0 + 1, {}};
  c.rgba.assign(static_cast<size_t>(c.width) * static_cast<size_t>(c.height) * 4, 0);
  for (int y = 0; y < c.height; ++y) {
    for (int x = 0; x < c.width; ++x) {
      const size_t source = static_cast<size_t>(y0 + y) * static_cast<size_t>(w) + static_cast<size_t>(x0 + x);
      if (!mask[source]) continue;
      uint8_t* out = &c.rgba[(static_cast<size_t>(y) * static_cast<size_t>(c.width) + static_cast<size_t>(x)) * 4];
      std::copy_n(&photo.pixels[source * 3], 3, out);
      out[3] = 255;
    }
  }
  return c;
}

}  // namespace sam2rt
