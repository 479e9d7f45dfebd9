#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sam2rt {

// COCO's uncompressed RLE of a binary mask: run lengths in column-major order
// (x outer, y inner), starting with a background run (0 when the first pixel is set).
struct UncompressedRle {
  int64_t height = 0;
  int64_t width = 0;
  std::vector<int64_t> counts;
};

// mask: height x width bytes, row-major, nonzero = set.
UncompressedRle encode_rle(const uint8_t* mask, int64_t height, int64_t width);
// Row-major 0/1 bytes; throws Error when the counts do not sum to height * width.
std::vector<uint8_t> decode_rle(const UncompressedRle& rle);
// Sum of the odd-indexed counts (sam2.utils.amg.area_from_rle).
int64_t rle_area(const UncompressedRle& rle);

// The compressed counts string pycocotools' rleToString writes (what
// coco_encode_rle / mask_utils.frPyObjects give as "counts").
std::string coco_rle_string(const UncompressedRle& rle);
// Inverse of coco_rle_string (pycocotools' rleFrString); throws Error on a malformed string.
UncompressedRle coco_rle_from_string(const std::string& counts, int64_t height, int64_t width);

}  // namespace sam2rt
