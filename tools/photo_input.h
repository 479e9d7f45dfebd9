#pragma once

#include <cstdint>
#include <string>

#include "io/image.h"

namespace sam2rt::cli {

// decode_image_file, plus a note on stderr when the photo has 16-bit channels:
// the model sees them reduced to 8 bits, as Pillow's convert("RGB") (the
// reference's input) reduces them.
RgbImage read_photo(const std::string& path, int64_t max_pixels);

}  // namespace sam2rt::cli
