// The automatic mask generator against the goldens of Meta's official
// SAM2AutomaticMaskGenerator (../shared/fixtures/amg): `sam2rt everything` runs
// each case's parameters and the fixtures' own checker applies the matching rule.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli_goldens.h"
#include "cli_runner.h"
#include "io/image.h"
#include "io/mask_rle.h"

namespace sam2rt::testing {
namespace {

TEST(AmgGoldenMicro, MultimaskGrid8) { check_amg_case("micro_mm_g8"); }
TEST(AmgGoldenMicro, NmsAtMaskThreshold3) { check_amg_case("micro_nms_mt3"); }
TEST(AmgGoldenMicro, CropsSingleMask) { check_amg_case("micro_crops_sm"); }
TEST(AmgGoldenMicro, MaskToMaskWithHoleFilling) { check_amg_case("micro_m2m_holes"); }
TEST(AmgGoldenTiny, Grid16) { check_amg_case("tiny_g16"); }

}  // namespace
}  // namespace sam2rt::testing

namespace sam2rt::testing {
namespace {

// The output modes carry the same masks: COCO strings and PNG files decode to the
// uncompressed runs of the same run, and the overlay is a PNG of the photo's size.
TEST(AmgOutputs, ModesAgreeAndFilesAreWritten) {
  ScratchDir s("amg_outputs");
  auto run = [&](const std::string& mode, const std::string& json, std::vector<std::string> extra) {
    std::vector<std::string> args = {"everything", "--config", fixtures_dir() + "/micro/sam2.1_micro.yaml",
                                     "--model", fixtures_dir() + "/micro/micro.pt", "--image",
                                     fixtures_dir() + "/images/chelsea_288x112.png", "--points-per-side", "4",
                                     "--pred-iou-thresh", "0.4", "--stability-score-thresh", "0.5",
                                     "--output-mode", mode, "--json", s.file(json)};
    args.insert(args.end(), extra.begin(), extra.end());
    const CliResult r = run_cli(args, s, 120);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("everything: 16/16 points (100%)"), std::string::npos) << "a progress line: " << r.err;
    return nlohmann::json::parse(read_text(s.file(json)));
  };
  const nlohmann::json plain = run("uncompressed_rle", "plain.json", {});
  const nlohmann::json coco = run("coco_rle", "coco.json", {});
  const nlohmann::json binary = run("binary_mask", "binary.json", {"--out-dir", s.file("masks"), "--overlay",
                                                                   s.file("all.png")});
  ASSERT_GT(plain["masks"].size(), 0u);
  ASSERT_EQ(coco["masks"].size(), plain["masks"].size());
  ASSERT_EQ(binary["masks"].size(), plain["masks"].size());
  for (size_t i = 0; i < plain["masks"].size(); ++i) {
    const nlohmann::json& p = plain["masks"][i];
    const UncompressedRle rle{112, 288, p["segmentation"]["counts"].get<std::vector<int64_t>>()};
    EXPECT_EQ(coco["masks"][i]["segmentation"]["counts"].get<std::string>(), coco_rle_string(rle));
    EXPECT_EQ(coco["masks"][i]["bbox"], p["bbox"]);
    const std::string png = binary["masks"][i]["segmentation"].get<std::string>();
    const RgbImage mask = decode_image_file(s.file("masks/" + png));
    const std::vector<uint8_t> bits = decode_rle(rle);
    ASSERT_EQ(mask.pixels.size(), bits.size() * 3);
    for (size_t k = 0; k < bits.size(); ++k) ASSERT_EQ(mask.pixels[k * 3] != 0, bits[k] != 0) << png << " pixel " << k;
  }
  const RgbImage overlay = decode_image_file(s.file("all.png"));
  EXPECT_EQ(overlay.width, 288);
  EXPECT_EQ(overlay.height, 112);
}

// With crops on and no candidate past the filters, the official generate() raises
// (torchvision's box_area of an empty crop_boxes tensor); we return no masks: an
// empty list in a valid file, and the overlay is the photo itself.
TEST(AmgOutputs, NoSurvivorWithCropsIsAnEmptyResult) {
  ScratchDir s("amg_no_survivor");
  const CliResult r = run_cli({"everything", "--config", fixtures_dir() + "/micro/sam2.1_micro.yaml", "--model",
                               fixtures_dir() + "/micro/micro.pt", "--image",
                               fixtures_dir() + "/images/chelsea_288x112.png", "--points-per-side", "4",
                               "--crop-n-layers", "1", "--pred-iou-thresh", "1", "--stability-score-thresh", "1",
                               "--json", s.file("none.json"), "--overlay", s.file("all.png")},
                              s, 120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(nlohmann::json::parse(read_text(s.file("none.json")))["masks"].empty());
  const RgbImage photo = decode_image_file(fixtures_dir() + "/images/chelsea_288x112.png");
  const RgbImage overlay = decode_image_file(s.file("all.png"));
  EXPECT_EQ(overlay.pixels, photo.pixels);
}

}  // namespace
}  // namespace sam2rt::testing
