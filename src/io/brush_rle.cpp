#include "io/brush_rle.h"

#include <string>

#include "core/error.h"

namespace sam2rt {

namespace {

constexpr int kWordBits = 8;
// The field widths of a run's length, indexed by the chunk's 2-bit size code.
constexpr int kRunLengthBits[4] = {3, 4, 8, 16};
constexpr int64_t kLongestChunk = int64_t{1} << 16;
constexpr int kChannels = 4;

// Most significant bit first, as brush.py's bit strings are read.
class BitWriter {
 public:
  void put(uint64_t value, int bits) {
    for (int bit = bits - 1; bit >= 0; --bit) {
      if (used_ == 0) bytes_.push_back(0);
      if ((value >> bit) & 1u) bytes_.back() = static_cast<uint8_t>(bytes_.back() | (0x80u >> used_));
      used_ = (used_ + 1) % 8;
    }
  }
  // brush.py pads with 8 - (bits % 8) zero bits: a whole byte when already aligned.
  std::vector<uint8_t> finish() && {
    if (used_ == 0) bytes_.push_back(0);
    return std::move(bytes_);
  }

 private:
  std::vector<uint8_t> bytes_;
  int used_ = 0;  // bits used in the last byte
};

// A run of `length` copies of `value`, split as brush.py splits it.
void put_run(BitWriter& out, int64_t length, uint8_t value) {
  if (length == 1) {
    // A literal chunk of one value: flag 0, size code 0, count - 1 = 0.
    out.put(0, 1);
    out.put(0, 2);
    out.put(0, kRunLengthBits[0]);
    out.put(value, kWordBits);
    return;
  }
  int code = 0;
  while (code < 3 && length > (int64_t{1} << kRunLengthBits[code])) ++code;
  if (code == 3) {
    while (length > kLongestChunk) {
      out.put(1, 1);
      out.put(3, 2);
      out.put(kLongestChunk - 1, kRunLengthBits[3]);
      out.put(value, kWordBits);
      length -= kLongestChunk;
    }
  }
  out.put(1, 1);
  out.put(static_cast<uint64_t>(code), 2);
  out.put(static_cast<uint64_t>(length - 1), kRunLengthBits[code]);
  out.put(value, kWordBits);
}

}  // namespace

std::vector<uint8_t> encode_brush_rle(const uint8_t* mask, int64_t pixels) {
  const int64_t values = pixels * kChannels;
  if (pixels < 0 || values > int64_t{0xFFFFFFFF}) {
    throw Error("a brush RLE holds at most 2^32 - 1 values; this mask has " + std::to_string(pixels) + " pixels");
  }
  BitWriter out;
  out.put(static_cast<uint64_t>(values), 32);
  out.put(kWordBits - 1, 5);
  for (const int bits : kRunLengthBits) out.put(static_cast<uint64_t>(bits - 1), 4);
  int64_t start = 0;
  while (start < pixels) {
    int64_t end = start + 1;
    while (end < pixels && mask[end] == mask[start]) ++end;
    put_run(out, (end - start) * kChannels, mask[start]);
    start = end;
  }
  return std::move(out).finish();
}

}  // namespace sam2rt
