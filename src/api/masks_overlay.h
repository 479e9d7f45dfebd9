#pragma once

#include <vector>

#include "io/image.h"
#include "io/mask_rle.h"

namespace sam2rt {

// The photo with every mask tinted in its own colour (largest first, so small
// masks stay visible on top) and its outline drawn, as the official notebooks'
// show_anns paints the generator's output.
RgbImage render_masks_overlay(const RgbImage& photo, const std::vector<UncompressedRle>& masks);

}  // namespace sam2rt
