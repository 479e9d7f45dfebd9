// The pieces of the automatic mask generator, each against a plain reference or
// a hand-worked case.
#include <gtest/gtest.h>

#include <random>

#include "api/automatic_mask_generator.h"
#include "core/error.h"
#include "io/mask_rle.h"
#include "kernels/connected_components.h"
#include "kernels/upscaled_mask_scan.h"
#include "model/amg_grids.h"
#include "model/box_nms.h"
#include "model/mask_postprocess.h"

namespace sam2rt {
namespace {

std::vector<uint8_t> random_mask(std::mt19937& rng, int64_t h, int64_t w, double density) {
  std::bernoulli_distribution bit(density);
  std::vector<uint8_t> mask(static_cast<size_t>(h * w));
  for (auto& m : mask) m = bit(rng);
  return mask;
}

TEST(MaskRle, ColumnMajorRunsStartWithBackground) {
  // 2 x 3, row-major:  0 1 1 / 1 1 0  -> column-major 0 1 | 1 1 | 1 0
  const std::vector<uint8_t> mask = {0, 1, 1, 1, 1, 0};
  const UncompressedRle rle = encode_rle(mask.data(), 2, 3);
  EXPECT_EQ(rle.counts, (std::vector<int64_t>{1, 4, 1}));
  EXPECT_EQ(rle_area(rle), 4);
  EXPECT_EQ(decode_rle(rle), mask);
  const std::vector<uint8_t> first_set = {1, 0, 0, 0};
  EXPECT_EQ(encode_rle(first_set.data(), 2, 2).counts, (std::vector<int64_t>{0, 1, 3}));
}

TEST(MaskRle, RoundTripsRandomMasks) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    const int64_t h = 1 + trial % 9, w = 1 + (trial * 7) % 13;
    const auto mask = random_mask(rng, h, w, 0.1 + 0.04 * trial);
    const UncompressedRle rle = encode_rle(mask.data(), h, w);
    EXPECT_EQ(decode_rle(rle), mask);
    const UncompressedRle back = coco_rle_from_string(coco_rle_string(rle), h, w);
    EXPECT_EQ(back.counts, rle.counts);
  }
}

TEST(MaskRle, CocoStringsAsPycocotoolsWritesThem) {
  // Worked by hand from pycocotools' rleToString: 5-bit groups + '0', 0x20 = more
  // groups, counts from the fourth on stored as the difference to two before.
  EXPECT_EQ(coco_rle_string({2, 3, {3, 2, 1}}), "321");
  EXPECT_EQ(coco_rle_string({2, 11, {0, 5, 10, 7}}), "05:2");
  // 40 = 8 + 1*32 -> 'X' (8|0x20) '1'; 3 - 40 = -37 -> 'k' (27|0x20) 'N' (30, sign bit set).
  EXPECT_EQ(coco_rle_string({46, 1, {1, 40, 2, 3}}), "1X12kN");
  EXPECT_EQ(coco_rle_from_string("1X12kN", 46, 1).counts, (std::vector<int64_t>{1, 40, 2, 3}));
}

TEST(MaskRle, RefusesMalformedInput) {
  EXPECT_THROW(decode_rle({2, 2, {1, 2}}), Error);
  EXPECT_THROW(coco_rle_from_string("1X", 46, 1), Error);  // ends inside a count
  EXPECT_THROW(coco_rle_from_string("3~", 3, 1), Error);   // character outside the alphabet
  EXPECT_THROW(coco_rle_from_string("32", 2, 2), Error);   // counts do not cover the mask
}

TEST(AmgGrids, PointGridIsNumpyLinspace) {
  const auto grid = build_point_grid(2);
  ASSERT_EQ(grid.size(), 4u);
  EXPECT_EQ(grid[0], (std::array<double, 2>{0.25, 0.25}));
  EXPECT_EQ(grid[1], (std::array<double, 2>{0.75, 0.25}));  // x fastest
  EXPECT_EQ(grid[3], (std::array<double, 2>{0.75, 0.75}));
  const auto g3 = build_point_grid(3);
  EXPECT_EQ(g3[1][0], 1.0 * ((1.0 - 1.0 / 6) - 1.0 / 6) / 2 + 1.0 / 6);
  EXPECT_EQ(g3[2][0], 1.0 - 1.0 / 6);  // the last point is `stop` itself
  const auto layers = build_all_layer_point_grids(12, 1, 2);
  ASSERT_EQ(layers.size(), 2u);
  EXPECT_EQ(layers[0].size(), 144u);
  EXPECT_EQ(layers[1].size(), 36u);
}

TEST(AmgGrids, CropBoxesOfTheCropsGolden) {
  // micro_crops_sm: 288x112, one layer, overlap 0.25 -> 4 crops of 158x70.
  const auto boxes = generate_crop_boxes(112, 288, 1, 0.25);
  ASSERT_EQ(boxes.size(), 5u);
  auto xyxy = [](const CropBox& b) { return std::array<int64_t, 4>{b.x0, b.y0, b.x1, b.y1}; };
  EXPECT_EQ(xyxy(boxes[0]), (std::array<int64_t, 4>{0, 0, 288, 112}));
  EXPECT_EQ(xyxy(boxes[1]), (std::array<int64_t, 4>{0, 0, 158, 70}));
  EXPECT_EQ(xyxy(boxes[2]), (std::array<int64_t, 4>{0, 42, 158, 112}));  // x0-major
  EXPECT_EQ(xyxy(boxes[3]), (std::array<int64_t, 4>{130, 0, 288, 70}));
  EXPECT_EQ(xyxy(boxes[4]), (std::array<int64_t, 4>{130, 42, 288, 112}));
  EXPECT_EQ(boxes[4].layer, 1);
}

TEST(BoxNms, KeepsInScoreOrderAndSuppressesAboveThreshold) {
  const std::vector<std::array<float, 4>> boxes = {{0, 0, 10, 10}, {1, 0, 11, 10}, {20, 20, 30, 30}, {0, 0, 10, 10}};
  const std::vector<float> scores = {0.5f, 0.9f, 0.7f, 0.9f};
  // IoU(0,1) = 90/110; box 3 equals box 0; ties keep input order (stable).
  EXPECT_EQ(batched_nms(boxes, scores, 0.5), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(batched_nms(boxes, scores, 1.0), (std::vector<int64_t>{1, 3, 2, 0}));
  // IoU exactly 0.818..: suppressed only when strictly above the threshold.
  EXPECT_EQ(batched_nms({{0, 0, 10, 10}, {1, 0, 11, 10}}, {1.0f, 0.5f}, 0.9), (std::vector<int64_t>{0, 1}));
}

TEST(BoxNms, ZeroAreaBoxesAreNeverSuppressed) {
  const std::vector<std::array<float, 4>> boxes = {{5, 5, 5, 9}, {5, 5, 5, 9}};
  EXPECT_EQ(batched_nms(boxes, {0.9f, 0.8f}, 0.0), (std::vector<int64_t>{0, 1}));
}

TEST(ConnectedComponents, MatchesFloodFill) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 30; ++trial) {
    const int64_t h = 1 + trial % 17, w = 1 + (trial * 5) % 23;
    const auto mask = random_mask(rng, h, w, 0.2 + 0.02 * trial);
    EXPECT_EQ(component_areas(mask.data(), h, w), component_areas_reference(mask.data(), h, w)) << trial;
  }
}

TEST(ConnectedComponents, DiagonalNeighboursJoin) {
  const std::vector<uint8_t> mask = {1, 0, 0, 0, 1, 0, 0, 0, 1};
  EXPECT_EQ(component_areas(mask.data(), 3, 3), (std::vector<int32_t>{3, 0, 0, 0, 3, 0, 0, 0, 3}));
}

TEST(MaskFill, FillsSmallHolesAndRemovesSmallIslands) {
  // 6x6 foreground with a 1-pixel hole and a separate 2-pixel island in a corner.
  Tensor logits = Tensor::filled({1, 8, 8}, -5.0f);
  for (int y = 1; y <= 6; ++y)
    for (int x = 1; x <= 5; ++x) logits[y * 8 + x] = 4.0f;
  logits[3 * 8 + 3] = -1.0f;  // hole
  logits[0 * 8 + 7] = 2.0f;   // island of 2 (diagonal to nothing else)
  logits[1 * 8 + 7] = 2.0f;
  Tensor filled = logits.clone();
  fill_holes_and_sprinkles(filled, MaskFill{0.0f, 1.0, 2.0});
  EXPECT_EQ(filled[3 * 8 + 3], 10.0f);
  EXPECT_EQ(filled[0 * 8 + 7], -10.0f);
  EXPECT_EQ(filled[1 * 8 + 7], -10.0f);
  EXPECT_EQ(filled[2 * 8 + 2], 4.0f);   // the big component stays
  EXPECT_EQ(filled[7 * 8 + 7], -5.0f);  // the big background stays
  Tensor holes_only = logits.clone();
  fill_holes_and_sprinkles(holes_only, MaskFill{0.0f, 1.0, 0.0});
  EXPECT_EQ(holes_only[0 * 8 + 7], 2.0f);
}

TEST(MaskFill, VideoHoleFillingSetsSmallBackgroundComponentsToOneTenth) {
  // fill_holes_in_mask_scores(mask, 8): background (<= 0) components of at most
  // 8 pixels, border ones included, become 0.1; larger ones and the foreground stay.
  Tensor logits = Tensor::filled({1, 8, 8}, 3.0f);
  for (int x = 0; x < 8; ++x) logits[7 * 8 + x] = -2.0f;  // 8-pixel border row: filled
  logits[2 * 8 + 2] = 0.0f;                              // a 2-pixel hole, 8-connected (diagonal)
  logits[3 * 8 + 3] = -7.0f;
  for (int y = 0; y < 3; ++y)
    for (int x = 5; x < 8; ++x) logits[y * 8 + x] = -1.0f;  // a 9-pixel corner: kept
  Tensor filled = logits.clone();
  fill_holes_in_mask_scores(filled, 8);
  EXPECT_EQ(filled[7 * 8 + 0], 0.1f);
  EXPECT_EQ(filled[2 * 8 + 2], 0.1f);
  EXPECT_EQ(filled[3 * 8 + 3], 0.1f);
  EXPECT_EQ(filled[0 * 8 + 5], -1.0f);
  EXPECT_EQ(filled[4 * 8 + 4], 3.0f);
}

TEST(UpscaledMaskScan, MatchesFullResizeThenCount) {
  std::mt19937 rng(11);
  std::normal_distribution<float> logit(0.0f, 3.0f);
  for (const auto& [ih, iw, oh, ow] : std::vector<std::array<int64_t, 4>>{
           {16, 16, 37, 23}, {8, 8, 8, 8}, {16, 16, 64, 64}, {12, 20, 5, 70}, {16, 16, 1, 1}}) {
    std::vector<float> plane(static_cast<size_t>(ih * iw));
    for (auto& v : plane) v = logit(rng);
    UpscaledMaskScanner scanner(ih, iw, oh, ow);
    UpscaledMaskSummary got;
    scanner.scan(plane.data(), 0.5f, 1.5f, -0.5f, got);
    const UpscaledMaskSummary want = upscaled_mask_summary_reference(plane.data(), ih, iw, oh, ow, 0.5f, 1.5f, -0.5f);
    EXPECT_EQ(got.above_high, want.above_high);
    EXPECT_EQ(got.above_low, want.above_low);
    ASSERT_EQ(got.runs.size(), want.runs.size());
    for (size_t i = 0; i < got.runs.size(); ++i) {
      EXPECT_EQ(got.runs[i].x, want.runs[i].x);
      EXPECT_EQ(got.runs[i].y0, want.runs[i].y0);
      EXPECT_EQ(got.runs[i].y1, want.runs[i].y1);
    }
  }
}

TEST(UpscaledMaskScan, SkipsOnlyWhatIsClearlyBelow) {
  // Mostly far below the cut-offs with a blob, values right at the margin, and
  // one plane entirely above: the skipped parts must not change any count or run.
  for (const float background : {-20.0f, -0.50001f, 5.0f}) {
    std::vector<float> plane(16 * 16, background);
    for (int y = 5; y < 9; ++y)
      for (int x = 3; x < 12; ++x) plane[static_cast<size_t>(y * 16 + x)] = 3.0f + 0.1f * static_cast<float>(x - y);
    plane[15 * 16 + 15] = -0.49999f;  // a corner just above `low`
    for (const auto& [oh, ow] : std::vector<std::array<int64_t, 2>>{{64, 64}, {37, 91}, {7, 5}}) {
      UpscaledMaskScanner scanner(16, 16, oh, ow);
      UpscaledMaskSummary got;
      scanner.scan(plane.data(), 0.0f, 0.5f, -0.5f, got);
      const UpscaledMaskSummary want =
          upscaled_mask_summary_reference(plane.data(), 16, 16, oh, ow, 0.0f, 0.5f, -0.5f);
      EXPECT_EQ(got.above_high, want.above_high) << background << " " << oh << "x" << ow;
      EXPECT_EQ(got.above_low, want.above_low) << background << " " << oh << "x" << ow;
      ASSERT_EQ(got.runs.size(), want.runs.size()) << background << " " << oh << "x" << ow;
      for (size_t i = 0; i < got.runs.size(); ++i) {
        EXPECT_EQ(got.runs[i].x, want.runs[i].x);
        EXPECT_EQ(got.runs[i].y0, want.runs[i].y0);
        EXPECT_EQ(got.runs[i].y1, want.runs[i].y1);
      }
    }
  }
}

TEST(AmgParams, EveryBadParameterIsNamed) {
  auto message = [](auto change) {
    AmgParams p;
    change(p);
    try {
      validate_amg_params(p);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NO_THROW(validate_amg_params(AmgParams{}));
  EXPECT_NE(message([](AmgParams& p) { p.points_per_side = -4; }).find("points_per_side"), std::string::npos);
  EXPECT_NE(message([](AmgParams& p) { p.points_per_side = 0; }).find("points_per_side"), std::string::npos);
  EXPECT_NE(message([](AmgParams& p) { p.points_per_batch = 0; }).find("points_per_batch"), std::string::npos);
  EXPECT_NE(message([](AmgParams& p) { p.pred_iou_thresh = 1.5; }).find("pred_iou_thresh"), std::string::npos);
  EXPECT_NE(message([](AmgParams& p) { p.stability_score_thresh = -0.1; }).find("stability_score_thresh"),
            std::string::npos);
  EXPECT_NE(message([](AmgParams& p) { p.box_nms_thresh = 2; }).find("box_nms_thresh"), std::string::npos);
  EXPECT_NE(message([](AmgParams& p) { p.crop_nms_thresh = -1; }).find("crop_nms_thresh"), std::string::npos);
  EXPECT_NE(message([](AmgParams& p) { p.crop_overlap_ratio = 1.0; }).find("crop_overlap_ratio"),
            std::string::npos);
  EXPECT_NE(message([](AmgParams& p) { p.crop_n_layers = -1; }).find("crop_n_layers"), std::string::npos);
  EXPECT_NE(message([](AmgParams& p) { p.crop_n_points_downscale_factor = 0; }).find("crop_n_points_downscale"),
            std::string::npos);
  EXPECT_NE(message([](AmgParams& p) { p.stability_score_offset = std::nan(""); }).find("stability_score_offset"),
            std::string::npos);
  EXPECT_NE(message([](AmgParams& p) { p.min_mask_region_area = -3; }).find("min_mask_region_area"),
            std::string::npos);
  EXPECT_NE(message([](AmgParams& p) {
              p.points_per_side = 2;
              p.crop_n_layers = 2;
              p.crop_n_points_downscale_factor = 2;
            }).find("crop layer 2"),
            std::string::npos);
  EXPECT_NE(message([](AmgParams& p) { p.points_per_side.reset(); }).find("exactly one"), std::string::npos);
  EXPECT_NE(message([](AmgParams& p) {
              p.points_per_side.reset();
              p.point_grids = {{}};
            }).find("point_grids[0] is empty"),
            std::string::npos);
  EXPECT_NE(message([](AmgParams& p) {
              p.points_per_side.reset();
              p.point_grids = {{{0.5, 1.5}}};
            }).find("outside [0, 1]"),
            std::string::npos);
}

}  // namespace
}  // namespace sam2rt
