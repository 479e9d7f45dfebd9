#pragma once

#include <array>
#include <optional>
#include <vector>

#include "core/tensor.h"
#include "model/config.h"

namespace sam2rt {

// A click in pixels of the ORIGINAL image (before the resize to image_size).
// label 1 = foreground, 0 = background.
struct PointPrompt {
  float x = 0, y = 0;
  int label = 1;
};

// What SAM2ImagePredictor.predict takes for one object: points, an optional box
// (x0, y0, x1, y1 in original pixels) and an optional low-res mask prompt
// [1, L, L], L = config.low_res_mask_size() (e.g. a previous low_res_masks[i]).
struct Prompt {
  std::vector<PointPrompt> points;
  std::optional<std::array<float, 4>> box;
  Tensor mask_input;
};

inline constexpr int kMaxPoints = 64;

// Throws Error naming the offending point/box/mask: non-finite coordinates or mask
// values, labels other than 0/1, x1 < x0 or y1 < y0, coordinates outside
// [0, W] x [0, H], more than kMaxPoints points, a mask that is not [1, L, L], or
// no prompt at all.
void validate_prompt(const Prompt& prompt, int orig_w, int orig_h, const ModelConfig& config);

}  // namespace sam2rt
