#include <gtest/gtest.h>

#include "api/cutout.h"
#include "core/error.h"
#include "io/image.h"
#include "io/png_writer.h"

namespace sam2rt {
namespace {

TEST(Cutout, BoxOfTheMaskWithAlpha) {
  RgbImage photo{4, 3, {}};
  for (int i = 0; i < 12; ++i) photo.pixels.insert(photo.pixels.end(), {uint8_t(i), uint8_t(10 + i), uint8_t(20 + i)});
  std::vector<uint8_t> mask(12, 0);
  mask[1 * 4 + 1] = mask[1 * 4 + 2] = mask[2 * 4 + 2] = 1;
  const Cutout c = cut_out(photo, mask);
  EXPECT_EQ(c.x0, 1);
  EXPECT_EQ(c.y0, 1);
  ASSERT_EQ(c.width, 2);
  ASSERT_EQ(c.height, 2);
  EXPECT_EQ(std::vector<uint8_t>(c.rgba.begin(), c.rgba.begin() + 4), (std::vector<uint8_t>{5, 15, 25, 255}));
  EXPECT_EQ(std::vector<uint8_t>(c.rgba.begin() + 8, c.rgba.begin() + 12), (std::vector<uint8_t>{0, 0, 0, 0}));
  EXPECT_EQ(std::vector<uint8_t>(c.rgba.begin() + 12, c.rgba.end()), (std::vector<uint8_t>{10, 20, 30, 255}));
  // The PNG keeps the alpha (decoded as Pillow's convert("RGB") drops it).
  const std::vector<uint8_t> png = encode_png_rgba8(c.rgba.data(), c.width, c.height);
  const RgbImage back = decode_image_bytes(png.data(), png.size(), "cutout");
  EXPECT_EQ(back.width, 2);
  EXPECT_EQ(back.pixels[0], 5);
}

TEST(Cutout, RefusesEmptyOrMismatchedMasks) {
  const RgbImage photo{2, 2, std::vector<uint8_t>(12, 7)};
  EXPECT_THROW(cut_out(photo, std::vector<uint8_t>(4, 0)), Error);
  EXPECT_THROW(cut_out(photo, std::vector<uint8_t>(5, 1)), Error);
}

}  // namespace
}  // namespace sam2rt
