#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sam2rt {

// 8-bit PNG output. The file writers replace `path` atomically (readers see the
// old file or the complete new one); errors throw Error naming the path.
void write_png_gray8(const std::string& path, const uint8_t* pixels, int width, int height);
void write_png_rgb8(const std::string& path, const uint8_t* pixels, int width,
                    int height);  // RGB interleaved

// The same encoding in memory.
std::vector<uint8_t> encode_png_gray8(const uint8_t* pixels, int width, int height);
std::vector<uint8_t> encode_png_rgb8(const uint8_t* pixels, int width, int height);
std::vector<uint8_t> encode_png_rgba8(const uint8_t* pixels, int width, int height);  // RGBA interleaved

}  // namespace sam2rt
