#pragma once

#include <cstdint>
#include <vector>

namespace sam2rt {

// Baseline JPEG of an 8-bit RGB image (interleaved, row-major) with libjpeg's
// standard tables at `quality` (1..100). Lossy: for photos and overlays, not
// for masks. Errors throw Error.
std::vector<uint8_t> encode_jpeg_rgb8(const uint8_t* pixels, int width, int height, int quality);

}  // namespace sam2rt
