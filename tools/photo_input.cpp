#include "photo_input.h"

#include <cstdio>

#include "io/png_bit_depth.h"

namespace sam2rt::cli {

RgbImage read_photo(const std::string& path, int64_t max_pixels) {
  RgbImage image = decode_image_file(path, max_pixels);
  if (png_file_bit_depth(path) == 16) {
    std::fprintf(stderr,
                 "note: '%s' has 16-bit channels; they are reduced to 8 bits as Pillow's convert(\"RGB\") does "
                 "(what the reference predictor sees)\n",
                 path.c_str());
  }
  return image;
}

}  // namespace sam2rt::cli
