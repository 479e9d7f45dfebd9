#pragma once

// Label Studio's brush RLE decoder, re-implemented from label-studio-sdk's
// converter/brush.py (decode_rle: a 32-bit value count, the word size - 1 in 5 bits,
// four run-length field widths - 1 in 4 bits each; then chunks of a 1-bit kind, a
// 2-bit field index and a count - 1 in that field's width, followed by one word
// repeated (kind 1) or count literal words (kind 0)), and its RGBA-to-mask step
// (the alpha channel of [height, width, 4]). Throws std::runtime_error on a stream
// that ends early, as a reader past the end of brush.py's bit string would fail.

#include <cstdint>
#include <stdexcept>
#include <vector>

namespace sam2rt::testing {

class BrushBitReader {
 public:
  explicit BrushBitReader(const std::vector<uint8_t>& bytes) : bytes_(bytes) {}
  uint32_t read(int bits) {
    uint32_t value = 0;
    for (int i = 0; i < bits; ++i, ++position_) {
      if (position_ / 8 >= bytes_.size()) throw std::runtime_error("brush RLE ends early");
      value = (value << 1) | ((bytes_[position_ / 8] >> (7 - position_ % 8)) & 1u);
    }
    return value;
  }

 private:
  const std::vector<uint8_t>& bytes_;
  size_t position_ = 0;
};

// The flat RGBA values brush.py's decode_rle returns.
inline std::vector<uint8_t> decode_brush_rle_values(const std::vector<uint8_t>& rle) {
  BrushBitReader in(rle);
  const uint32_t count = in.read(32);
  const int word_bits = static_cast<int>(in.read(5)) + 1;
  int run_bits[4];
  for (int& bits : run_bits) bits = static_cast<int>(in.read(4)) + 1;
  std::vector<uint8_t> out(count, 0);
  size_t i = 0;
  while (i < count) {
    const bool repeated = in.read(1) != 0;
    const size_t end = i + 1 + in.read(run_bits[in.read(2)]);
    if (end > count) throw std::runtime_error("brush RLE run past the value count");
    if (repeated) {
      const auto value = static_cast<uint8_t>(in.read(word_bits));
      for (; i < end; ++i) out[i] = value;
    } else {
      for (; i < end; ++i) out[i] = static_cast<uint8_t>(in.read(word_bits));
    }
  }
  return out;
}

// The mask Label Studio shows: the alpha channel of the decoded RGBA image.
inline std::vector<uint8_t> decode_brush_rle_mask(const std::vector<uint8_t>& rle) {
  const std::vector<uint8_t> values = decode_brush_rle_values(rle);
  std::vector<uint8_t> mask(values.size() / 4);
  for (size_t p = 0; p < mask.size(); ++p) mask[p] = values[4 * p + 3];
  return mask;
}

}  // namespace sam2rt::testing
