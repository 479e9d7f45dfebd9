#pragma once

#include <cstdint>
#include <vector>

#include "io/image.h"
#include "model/prompt.h"

namespace sam2rt {

// The photo with the mask tinted over it, its outline drawn, and the prompts
// marked (green = object point, red = background point, yellow = box).
RgbImage render_overlay(const RgbImage& photo, const std::vector<uint8_t>& mask, const Prompt& prompt);

// Marks the prompt on the image as render_overlay does (discs for the points, a
// rectangle for the box), e.g. over render_masks_overlay's tints for several objects.
void draw_prompt_markers(RgbImage& image, const Prompt& prompt);

}  // namespace sam2rt
