#include "api/overlay.h"

#include <algorithm>
#include <cmath>

namespace sam2rt {

namespace {

struct Color {
  uint8_t r, g, b;
};

constexpr Color kMaskTint{30, 144, 255};
constexpr Color kPositive{0, 220, 60};
constexpr Color kNegative{235, 40, 40};
constexpr Color kBox{255, 210, 0};
constexpr Color kOutline{255, 255, 255};

class Canvas {
 public:
  explicit Canvas(RgbImage& image) : image_(image) {}

  void set(int x, int y, Color c) {
    if (x < 0 || y < 0 || x >= image_.width || y >= image_.height) return;
    uint8_t* p = &image_.pixels[(static_cast<size_t>(y) * image_.width + x) * 3];
    p[0] = c.r;
    p[1] = c.g;
    p[2] = c.b;
  }

  void disc(float cx, float cy, int radius, Color fill) {
    const int x0 = static_cast<int>(std::lround(cx)), y0 = static_cast<int>(std::lround(cy));
    for (int dy = -radius - 1; dy <= radius + 1; ++dy)
      for (int dx = -radius - 1; dx <= radius + 1; ++dx) {
        const int d2 = dx * dx + dy * dy;
        if (d2 <= radius * radius) set(x0 + dx, y0 + dy, fill);
        else if (d2 <= (radius + 1) * (radius + 1)) set(x0 + dx, y0 + dy, kOutline);
      }
  }

  void rectangle(float x0, float y0, float x1, float y1, int thickness, Color c) {
    const int l = static_cast<int>(std::lround(x0)), t = static_cast<int>(std::lround(y0));
    const int r = static_cast<int>(std::lround(x1)), b = static_cast<int>(std::lround(y1));
    for (int k = 0; k < thickness; ++k) {
      for (int x = l; x <= r; ++x) {
        set(x, t + k, c);
        set(x, b - k, c);
      }
      for (int y = t; y <= b; ++y) {
        set(l + k, y, c);
        set(r - k, y, c);
      }
    }
  }

 private:
  RgbImage& image_;
};

}  // namespace

RgbImage render_overlay(const RgbImage& photo, const std::vector<uint8_t>& mask, const Prompt& prompt) {
  RgbImage out = photo;
  const int w = photo.width, h = photo.height;
  auto inside = [&](int x, int y) { return x >= 0 && y >= 0 && x < w && y < h && mask[static_cast<size_t>(y) * w + x]; };
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      if (!inside(x, y)) continue;
      uint8_t* p = &out.pixels[(static_cast<size_t>(y) * w + x) * 3];
      const bool edge = !inside(x - 1, y) || !inside(x + 1, y) || !inside(x, y - 1) || !inside(x, y + 1);
      const Color tint = edge ? kOutline : kMaskTint;
      const int alpha = edge ? 255 : 115;  // of 255
      p[0] = static_cast<uint8_t>((p[0] * (255 - alpha) + tint.r * alpha) / 255);
      p[1] = static_cast<uint8_t>((p[1] * (255 - alpha) + tint.g * alpha) / 255);
      p[2] = static_cast<uint8_t>((p[2] * (255 - alpha) + tint.b * alpha) / 255);
    }
  }
  draw_prompt_markers(out, prompt);
  return out;
}

void draw_prompt_markers(RgbImage& image, const Prompt& prompt) {
  Canvas canvas(image);
  const int marker = std::max(3, std::min(image.width, image.height) / 100);
  if (prompt.box) {
    const auto& b = *prompt.box;
    canvas.rectangle(b[0], b[1], b[2], b[3], std::max(1, marker / 2), kBox);
  }
  for (const PointPrompt& p : prompt.points) canvas.disc(p.x, p.y, marker, p.label == 1 ? kPositive : kNegative);
}

}  // namespace sam2rt
