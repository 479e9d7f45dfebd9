#pragma once

#include <string>

namespace sam2rt {

// The bits per sample a PNG file stores (its IHDR bit depth: 1, 2, 4, 8 or 16),
// read from the first 25 bytes; 0 when the file is not a PNG or cannot be read
// (decode_image_file reports those problems). Lets callers tell users that a
// 16-bit photo is reduced to 8 bits as Pillow reduces it.
int png_file_bit_depth(const std::string& path);

}  // namespace sam2rt
