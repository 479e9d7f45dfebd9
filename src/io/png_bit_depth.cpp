#include "io/png_bit_depth.h"

#include <array>
#include <cstring>
#include <fstream>

namespace sam2rt {

int png_file_bit_depth(const std::string& path) {
  // Signature (8 bytes), IHDR length and type (8), width and height (8), bit depth.
  constexpr size_t kBitDepthOffset = 24;
  constexpr std::array<unsigned char, 16> kStart = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n',
                                                    0,    0,   0,   13,  'I',  'H',  'D',  'R'};
  std::array<char, kBitDepthOffset + 1> header{};
  std::ifstream in(path, std::ios::binary);
  if (!in.read(header.data(), header.size())) return 0;
  if (std::memcmp(header.data(), kStart.data(), kStart.size()) != 0) return 0;
  return static_cast<unsigned char>(header[kBitDepthOffset]);
}

}  // namespace sam2rt
