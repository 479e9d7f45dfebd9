#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace sam2rt {

struct RgbImage {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> pixels;  // RGB interleaved, row-major
};

// Pillow's own default limit is ~89M pixels (a warning) and 2x that (an error).
constexpr int64_t kDefaultMaxImagePixels = 100'000'000;

// Whether a JPEG's EXIF orientation is applied: the image predictor's photos
// are (ImageOps.exif_transpose), the official video loader's frames are not
// (plain Image.open).
enum class ExifOrientation { apply, ignore };

// Decodes a PNG or JPEG into 8-bit RGB with the pixel values that Pillow 9.4's
// `ImageOps.exif_transpose(Image.open(path)).convert("RGB")` gives (JPEG EXIF
// orientation applied unless `orientation` is ignore; alpha dropped, not
// composited; 16-bit channels reduced as Pillow does). Images with width *
// height > max_pixels are refused from the header alone, before any pixel
// memory is allocated. Every failure (missing, empty, truncated, corrupt or
// unsupported file) throws Error naming the origin.
RgbImage decode_image_file(const std::string& path, int64_t max_pixels = kDefaultMaxImagePixels,
                           ExifOrientation orientation = ExifOrientation::apply);
RgbImage decode_image_bytes(const uint8_t* data, size_t size, const std::string& origin,
                            int64_t max_pixels = kDefaultMaxImagePixels,
                            ExifOrientation orientation = ExifOrientation::apply);

}  // namespace sam2rt
