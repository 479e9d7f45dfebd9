#include <gtest/gtest.h>

#include <algorithm>

#include "api/mask_polygons.h"
#include "core/error.h"

namespace sam2rt {
namespace {

std::vector<uint8_t> blank(int w, int h) { return std::vector<uint8_t>(static_cast<size_t>(w * h), 0); }

void fill_rect(std::vector<uint8_t>& m, int w, int x0, int y0, int x1, int y1, uint8_t v) {
  for (int y = y0; y < y1; ++y)
    for (int x = x0; x < x1; ++x) m[static_cast<size_t>(y * w + x)] = v;
}

TEST(MaskPolygons, RectangleSimplifiesToItsFourCorners) {
  auto mask = blank(20, 12);
  fill_rect(mask, 20, 3, 2, 15, 9, 1);
  const auto polygons = mask_polygons(mask, 20, 12, 0.5);
  ASSERT_EQ(polygons.size(), 1u);
  EXPECT_TRUE(polygons[0].holes.empty());
  auto corners = polygons[0].exterior;
  std::sort(corners.begin(), corners.end());
  EXPECT_EQ(corners, (std::vector<std::array<int, 2>>{{3, 2}, {3, 8}, {14, 2}, {14, 8}}));
  // Without simplification every boundary pixel's centre is a vertex.
  EXPECT_EQ(mask_polygons(mask, 20, 12, 0.0)[0].exterior.size(), static_cast<size_t>(2 * (11 + 6)));
}

TEST(MaskPolygons, RingHasOneHoleAndSeparatePartsArePolygonsOfTheirOwn) {
  auto mask = blank(30, 20);
  fill_rect(mask, 30, 2, 2, 14, 14, 1);
  fill_rect(mask, 30, 5, 5, 10, 10, 0);   // the hole
  fill_rect(mask, 30, 20, 4, 26, 8, 1);   // a second part
  mask[static_cast<size_t>(16 * 30 + 16)] = 1;  // a single pixel
  const auto polygons = mask_polygons(mask, 30, 20, 0.5);
  ASSERT_EQ(polygons.size(), 3u);
  size_t with_hole = 0;
  for (const MaskPolygon& p : polygons) {
    if (p.holes.empty()) continue;
    ++with_hole;
    ASSERT_EQ(p.holes.size(), 1u);
    int min_x = 99, max_x = -1;
    for (const auto& v : p.holes[0]) {
      min_x = std::min(min_x, v[0]);
      max_x = std::max(max_x, v[0]);
    }
    EXPECT_EQ(min_x, 4);  // the hole's contour runs on the object pixels around it
    EXPECT_EQ(max_x, 10);
  }
  EXPECT_EQ(with_hole, 1u);
  const nlohmann::json j = polygons_json(polygons);
  EXPECT_EQ(j.size(), 3u);
  EXPECT_TRUE(j[0].contains("exterior") && j[0].contains("holes"));
}

TEST(MaskPolygons, EmptyMaskAndBadArguments) {
  EXPECT_TRUE(mask_polygons(blank(5, 5), 5, 5, 1.0).empty());
  EXPECT_THROW(mask_polygons(blank(5, 5), 6, 5, 1.0), Error);
  EXPECT_THROW(mask_polygons(blank(5, 5), 5, 5, -1.0), Error);
}

}  // namespace
}  // namespace sam2rt
