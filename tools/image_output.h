#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sam2rt::cli {

enum class ImageFormat { png, jpeg };

// The format an output file's extension asks for (case-insensitive): .png, and
// .jpg/.jpeg where `jpeg_allowed` (JPEG is lossy: fine for an overlay, not for a
// mask). Error naming `flag` and the supported extensions otherwise.
ImageFormat image_format_for(const std::string& path, const std::string& flag, bool jpeg_allowed);

// 8-bit RGB (interleaved) encoded in `format`.
std::vector<uint8_t> encode_rgb8(ImageFormat format, const uint8_t* pixels, int width, int height);

}  // namespace sam2rt::cli
