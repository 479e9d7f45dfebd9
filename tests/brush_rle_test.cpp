#include "io/brush_rle.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "brush_rle_decoder.h"
#include "core/error.h"

namespace sam2rt {
namespace {

using testing::decode_brush_rle_mask;
using testing::decode_brush_rle_values;

TEST(BrushRle, EncodesAThreePixelMaskBitForBit) {
  // 12 values (3 RGBA pixels): header 12, word size 8 (7), field widths 3 4 8 16
  // (2 3 7 15); a run of 4 zeros (1 00 011 00000000), a run of 8 x 255
  // (1 00 111 11111111); 81 bits padded with 7 zero bits.
  const std::vector<uint8_t> mask = {0, 255, 255};
  EXPECT_EQ(encode_brush_rle(mask.data(), 3), (std::vector<uint8_t>{0, 0, 0, 12, 57, 27, 252, 96, 19, 255, 128}));
}

TEST(BrushRle, PadsAnAlignedStreamWithAWholeZeroByte) {
  // brush.py adds 8 - (bits % 8) zero bits, so a byte-aligned stream gains a whole byte:
  // 10 pixels are one run of 40 values (1 10 00100111 00000000, 19 bits); 53 + 19 = 72.
  const std::vector<uint8_t> mask(10, 0);
  const std::vector<uint8_t> rle = encode_brush_rle(mask.data(), 10);
  ASSERT_EQ(rle.size(), 10u);
  EXPECT_EQ(rle.back(), 0);
  EXPECT_EQ(decode_brush_rle_mask(rle), mask);
}

TEST(BrushRle, RoundTripsRandomMasksOfEveryRunLengthClass) {
  std::mt19937 random(7);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<uint8_t> mask;
    // Runs of 1 to 3 pixels (4..12 values: 3- and 4-bit fields), up to 64 (8-bit), and
    // long ones past 2^16 values (16-bit fields, split into several chunks).
    const int longest = trial % 3 == 0 ? 3 : trial % 3 == 1 ? 64 : 40000;
    uint8_t value = trial % 2 ? 255 : 0;
    while (mask.size() < 100000) {
      const int run = 1 + static_cast<int>(random() % static_cast<unsigned>(longest));
      mask.insert(mask.end(), static_cast<size_t>(run), value);
      value = value ? 0 : 255;
    }
    const std::vector<uint8_t> rle = encode_brush_rle(mask.data(), static_cast<int64_t>(mask.size()));
    EXPECT_EQ(decode_brush_rle_mask(rle), mask) << "trial " << trial;
    const std::vector<uint8_t> values = decode_brush_rle_values(rle);
    ASSERT_EQ(values.size(), 4 * mask.size());
    for (size_t i = 0; i < values.size(); ++i) ASSERT_EQ(values[i], mask[i / 4]) << "RGBA value " << i;
  }
}

TEST(BrushRle, SplitsRunsLongerThanTheWidestFieldExactlyAt65536Values) {
  for (const int64_t pixels : {int64_t{16384}, int64_t{16385}, int64_t{32768}, int64_t{40000}}) {
    const std::vector<uint8_t> mask(static_cast<size_t>(pixels), 255);
    EXPECT_EQ(decode_brush_rle_mask(encode_brush_rle(mask.data(), pixels)), mask) << pixels << " pixels";
  }
}

TEST(BrushRle, AnEmptyMaskIsTheHeaderAlone) {
  const std::vector<uint8_t> rle = encode_brush_rle(nullptr, 0);
  EXPECT_TRUE(decode_brush_rle_values(rle).empty());
  EXPECT_EQ(rle.size(), 7u);  // 53 bits -> 56
}

TEST(BrushRle, RefusesMasksWhoseValueCountDoesNotFitTheHeader) {
  const uint8_t pixel = 0;
  EXPECT_THROW(encode_brush_rle(&pixel, (int64_t{1} << 30)), Error);
  EXPECT_THROW(encode_brush_rle(&pixel, -1), Error);
}

}  // namespace
}  // namespace sam2rt
