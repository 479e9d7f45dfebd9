#include "model/prompt.h"

#include <cmath>
#include <sstream>
#include <string>

#include "core/error.h"

namespace sam2rt {

namespace {

std::string image_size_text(int w, int h) { return std::to_string(w) + "x" + std::to_string(h); }

std::string number_text(float v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

void check_inside(const std::string& what, float x, float y, int orig_w, int orig_h) {
  if (!std::isfinite(x) || !std::isfinite(y)) {
    throw Error(what + " has a non-finite coordinate (" + number_text(x) + ", " + number_text(y) +
                "); give pixel coordinates of the original image");
  }
  if (x < 0 || y < 0 || x > static_cast<float>(orig_w) || y > static_cast<float>(orig_h)) {
    throw Error(what + " (" + number_text(x) + ", " + number_text(y) + ") lies outside the " +
                image_size_text(orig_w, orig_h) + " image; coordinates are pixels of the original image, x in [0, " +
                std::to_string(orig_w) + "], y in [0, " + std::to_string(orig_h) + "]");
  }
}

}  // namespace

void validate_prompt(const Prompt& prompt, int orig_w, int orig_h, const ModelConfig& config) {
  if (orig_w <= 0 || orig_h <= 0) {
    throw Error("invalid original image size " + image_size_text(orig_w, orig_h) + "; both sides must be positive");
  }
  if (prompt.points.empty() && !prompt.box && prompt.mask_input.empty()) {
    throw Error("empty prompt: give at least one point, a box or a mask input");
  }
  if (prompt.points.size() > static_cast<size_t>(kMaxPoints)) {
    throw Error("too many points in one prompt: " + std::to_string(prompt.points.size()) + " (at most " +
                std::to_string(kMaxPoints) + ")");
  }
  for (size_t i = 0; i < prompt.points.size(); ++i) {
    const PointPrompt& p = prompt.points[i];
    const std::string what = "point " + std::to_string(i);
    check_inside(what, p.x, p.y, orig_w, orig_h);
    if (p.label != 0 && p.label != 1) {
      throw Error(what + " has label " + std::to_string(p.label) + "; labels are 1 (foreground) or 0 (background)");
    }
  }
  if (prompt.box) {
    const auto& b = *prompt.box;
    check_inside("box corner (x0, y0)", b[0], b[1], orig_w, orig_h);
    check_inside("box corner (x1, y1)", b[2], b[3], orig_w, orig_h);
    if (b[2] < b[0] || b[3] < b[1]) {
      throw Error("box [" + number_text(b[0]) + ", " + number_text(b[1]) + ", " + number_text(b[2]) + ", " +
                  number_text(b[3]) + "] has x1 < x0 or y1 < y0; give it as x0, y0, x1, y1 (top-left, bottom-right)");
    }
  }
  if (!prompt.mask_input.empty()) {
    const int64_t l = config.low_res_mask_size();
    const Tensor& m = prompt.mask_input;
    if (m.rank() != 3 || m.dim(0) != 1 || m.dim(1) != l || m.dim(2) != l) {
      throw Error("mask input has shape " + shape_to_string(m.shape()) + " but this model needs [1, " +
                  std::to_string(l) + ", " + std::to_string(l) + "] (a low_res_masks entry of an earlier prediction)");
    }
    for (int64_t i = 0; i < m.numel(); ++i) {
      if (!std::isfinite(m[i])) {
        throw Error("mask input holds a non-finite value at index " + std::to_string(i) + "; give finite logits");
      }
    }
  }
}

}  // namespace sam2rt
