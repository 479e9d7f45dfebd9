#include "io/mask_rle.h"

#include <numeric>

#include "core/error.h"

namespace sam2rt {

UncompressedRle encode_rle(const uint8_t* mask, int64_t height, int64_t width) {
  UncompressedRle rle{height, width, {}};
  bool current = false;  // the first run counts background pixels
  int64_t run = 0;
  for (int64_t x = 0; x < width; ++x) {
    for (int64_t y = 0; y < height; ++y) {
      const bool set = mask[y * width + x] != 0;
      if (set != current) {
        rle.counts.push_back(run);
        run = 0;
        current = set;
      }
      ++run;
    }
  }
  rle.counts.push_back(run);
  return rle;
}

std::vector<uint8_t> decode_rle(const UncompressedRle& rle) {
  const int64_t total = std::accumulate(rle.counts.begin(), rle.counts.end(), int64_t{0});
  if (rle.height < 0 || rle.width < 0 || total != rle.height * rle.width) {
    throw Error("RLE counts sum to " + std::to_string(total) + " but the mask has " + std::to_string(rle.height) +
                "x" + std::to_string(rle.width) + " pixels");
  }
  std::vector<uint8_t> mask(static_cast<size_t>(total), 0);
  int64_t position = 0;
  for (size_t i = 0; i < rle.counts.size(); ++i) {
    if (rle.counts[i] < 0) throw Error("RLE has a negative count");
    if (i % 2 == 1) {
      for (int64_t flat = position; flat < position + rle.counts[i]; ++flat) {  // column-major index
        mask[static_cast<size_t>((flat % rle.height) * rle.width + flat / rle.height)] = 1;
      }
    }
    position += rle.counts[i];
  }
  return mask;
}

int64_t rle_area(const UncompressedRle& rle) {
  int64_t area = 0;
  for (size_t i = 1; i < rle.counts.size(); i += 2) area += rle.counts[i];
  return area;
}

std::string coco_rle_string(const UncompressedRle& rle) {
  // pycocotools' rleToString: each count (from the third on, as the difference to the
  // count two before) in little-endian groups of 5 bits, 0x20 = more groups follow,
  // the last group's 0x10 bit carries the sign, every group offset by '0'.
  std::string out;
  for (size_t i = 0; i < rle.counts.size(); ++i) {
    int64_t x = rle.counts[i];
    if (i > 2) x -= rle.counts[i - 2];
    bool more = true;
    while (more) {
      int c = static_cast<int>(x & 0x1f);
      x >>= 5;
      more = (c & 0x10) ? x != -1 : x != 0;
      if (more) c |= 0x20;
      out.push_back(static_cast<char>(c + 48));
    }
  }
  return out;
}

UncompressedRle coco_rle_from_string(const std::string& counts, int64_t height, int64_t width) {
  UncompressedRle rle{height, width, {}};
  size_t p = 0;
  while (p < counts.size()) {
    int64_t x = 0;
    int shift = 0;
    bool more = true;
    while (more) {
      if (p >= counts.size()) throw Error("COCO RLE string ends inside a count");
      const int c = static_cast<int>(static_cast<unsigned char>(counts[p])) - 48;
      if (c < 0 || c > 63) throw Error("COCO RLE string has a character outside '0'..'o'");
      if (shift > 55) throw Error("COCO RLE string has a count too long to represent");
      x |= static_cast<int64_t>(c & 0x1f) << shift;
      more = (c & 0x20) != 0;
      ++p;
      shift += 5;
      if (!more && (c & 0x10)) x |= static_cast<int64_t>(-1) * (int64_t{1} << shift);
    }
    if (rle.counts.size() > 2) x += rle.counts[rle.counts.size() - 2];
    if (x < 0) throw Error("COCO RLE string decodes to a negative count");
    rle.counts.push_back(x);
  }
  const int64_t total = std::accumulate(rle.counts.begin(), rle.counts.end(), int64_t{0});
  if (total != height * width) {
    throw Error("COCO RLE counts sum to " + std::to_string(total) + " but the mask has " + std::to_string(height) +
                "x" + std::to_string(width) + " pixels");
  }
  return rle;
}

}  // namespace sam2rt
