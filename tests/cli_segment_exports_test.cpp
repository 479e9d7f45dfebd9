// `segment`'s exports of the best mask: --cutout (RGBA PNG), --polygons,
// --rle (COCO compressed RLE in --json), per object when there are several; and the
// note for 16-bit photos.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <png.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "io/image.h"
#include "io/mask_rle.h"
#include "test_image_writer.h"

namespace sam2rt::testing {
namespace {

std::string micro_pt() { return fixtures_dir() + "/micro/micro.pt"; }
std::string micro_yaml() { return fixtures_dir() + "/micro/sam2.1_micro.yaml"; }
std::string micro_image() { return fixtures_dir() + "/images/chelsea_288x112.png"; }
constexpr int kWidth = 288, kHeight = 112;

std::vector<std::string> micro_segment(const ScratchDir& s, std::vector<std::string> extra,
                                       const std::string& image = micro_image()) {
  std::vector<std::string> args = {"segment", "--model", micro_pt(), "--config", micro_yaml(),
                                   "--image", image,       "--out",   s.file("mask.png")};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

struct RgbaImage {
  int width = 0, height = 0;
  std::vector<uint8_t> pixels;
};

// libpng's simplified reader: the alpha channel that decode_image_file drops.
RgbaImage read_rgba_png(const std::string& path) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&image, path.c_str())) throw std::runtime_error("cannot read " + path);
  image.format = PNG_FORMAT_RGBA;
  RgbaImage out{static_cast<int>(image.width), static_cast<int>(image.height),
                std::vector<uint8_t>(PNG_IMAGE_SIZE(image))};
  if (!png_image_finish_read(&image, nullptr, out.pixels.data(), 0, nullptr)) {
    throw std::runtime_error("cannot decode " + path);
  }
  return out;
}

bool mask_at(const RgbImage& mask, int x, int y) {
  return mask.pixels[(static_cast<size_t>(y) * static_cast<size_t>(mask.width) + static_cast<size_t>(x)) * 3] != 0;
}

TEST(CliExports, CutoutIsTheMaskedPhotoInTheMaskBox) {
  ScratchDir s("export_cutout");
  const CliResult r = run_cli(micro_segment(s, {"--point", "110,41", "--cutout", s.file("c.png"), "--json",
                                                s.file("r.json")}),
                              s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json bbox = nlohmann::json::parse(read_text(s.file("r.json")))["masks"][0]["bbox"];
  ASSERT_TRUE(bbox.is_array());
  const int x0 = bbox[0], y0 = bbox[1], x1 = bbox[2], y1 = bbox[3];
  const RgbaImage cutout = read_rgba_png(s.file("c.png"));
  ASSERT_EQ(cutout.width, x1 - x0);
  ASSERT_EQ(cutout.height, y1 - y0);
  const RgbImage photo = decode_image_file(micro_image());
  const RgbImage mask = decode_image_file(s.file("mask.png"));
  int64_t opaque = 0;
  for (int y = 0; y < cutout.height; ++y) {
    for (int x = 0; x < cutout.width; ++x) {
      const uint8_t* rgba = &cutout.pixels[(static_cast<size_t>(y) * cutout.width + x) * 4];
      if (!mask_at(mask, x0 + x, y0 + y)) {
        ASSERT_EQ(rgba[3], 0) << x << "," << y;
        continue;
      }
      ++opaque;
      ASSERT_EQ(rgba[3], 255) << x << "," << y;
      const uint8_t* rgb = &photo.pixels[(static_cast<size_t>(y0 + y) * kWidth + (x0 + x)) * 3];
      ASSERT_TRUE(std::equal(rgb, rgb + 3, rgba)) << x << "," << y;
    }
  }
  EXPECT_EQ(opaque, nlohmann::json::parse(read_text(s.file("r.json")))["masks"][0]["area"].get<int64_t>());
}

TEST(CliExports, RleDecodesToEachMask) {
  ScratchDir s("export_rle");
  const CliResult r = run_cli(micro_segment(s, {"--point", "110,41", "--multimask", "--rle", "--json",
                                                s.file("r.json")}),
                              s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json report = nlohmann::json::parse(read_text(s.file("r.json")));
  ASSERT_EQ(report["masks"].size(), 3u);
  for (const auto& entry : report["masks"]) {
    const nlohmann::json& segmentation = entry["segmentation"];
    EXPECT_EQ(segmentation["size"], nlohmann::json::array({kHeight, kWidth}));
    const UncompressedRle rle = coco_rle_from_string(segmentation["counts"], kHeight, kWidth);
    EXPECT_EQ(rle_area(rle), entry["area"].get<int64_t>());
  }
  const size_t best = report["best_index"];
  const std::vector<uint8_t> decoded = decode_rle(
      coco_rle_from_string(report["masks"][best]["segmentation"]["counts"], kHeight, kWidth));
  const RgbImage mask = decode_image_file(s.file("mask.png"));
  for (size_t i = 0; i < decoded.size(); ++i) ASSERT_EQ(decoded[i] != 0, mask.pixels[i * 3] != 0) << i;
}

TEST(CliExports, JsonOnlyRunNeedsNoOutAndWritesNoMaskFile) {
  ScratchDir s("export_json_only");
  const std::vector<std::string> args = {"segment", "--model", micro_pt(), "--config", micro_yaml(), "--image",
                                         micro_image(), "--point", "110,41", "--rle", "--json", "-"};
  const CliResult r = run_cli(args, s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json report = nlohmann::json::parse(r.out);
  ASSERT_EQ(report["masks"].size(), 1u);
  EXPECT_TRUE(report["masks"][0]["segmentation"]["counts"].is_string());
  EXPECT_FALSE(report.contains("out"));
  // The same mask as a run with --out.
  const CliResult with_out = run_cli(micro_segment(s, {"--point", "110,41", "--rle", "--json", s.file("r.json")}), s);
  ASSERT_EQ(with_out.exit_code, 0) << with_out.err;
  EXPECT_EQ(nlohmann::json::parse(read_text(s.file("r.json")))["masks"], report["masks"]);
  // Several objects without --out: numbered names are not invented.
  const std::vector<std::string> objects = {"segment", "--model", micro_pt(), "--config", micro_yaml(), "--image",
                                            micro_image(), "--box", "10,10,100,80", "--box", "120,20,280,100",
                                            "--json", "-"};
  const CliResult several = run_cli(objects, s);
  ASSERT_EQ(several.exit_code, 0) << several.err;
  const nlohmann::json listed = nlohmann::json::parse(several.out);
  ASSERT_EQ(listed["objects"].size(), 2u);
  EXPECT_FALSE(listed["objects"][0].contains("out"));
}

TEST(CliExports, ARunWithNothingToWriteSaysWhatToGive) {
  ScratchDir s("export_nothing");
  const CliResult r = run_cli({"segment", "--model", micro_pt(), "--config", micro_yaml(), "--image", micro_image(),
                               "--point", "110,41"},
                              s);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--out FILE.png"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--json"), std::string::npos) << r.err;
}

TEST(CliExports, SeveralObjectsExportEachObject) {
  ScratchDir s("export_objects");
  const CliResult r = run_cli(micro_segment(s, {"--box", "80,15,140,65", "10,10,60,90", "--cutout", s.file("c.png"),
                                                "--rle", "--json", s.file("r.json")}),
                              s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json report = nlohmann::json::parse(read_text(s.file("r.json")));
  for (size_t i = 0; i < 2; ++i) {
    const nlohmann::json& object = report["objects"][i];
    const RgbaImage cutout = read_rgba_png(s.file("c_" + std::to_string(i) + ".png"));
    const nlohmann::json& bbox = object["masks"][0]["bbox"];
    EXPECT_EQ(cutout.width, bbox[2].get<int>() - bbox[0].get<int>()) << i;
    EXPECT_TRUE(object["masks"][0].contains("segmentation")) << i;
  }
  EXPECT_FALSE(std::filesystem::exists(s.file("c.png")));
}

// Outlines in pixel coordinates: with tolerance 0 every vertex is a boundary pixel of
// the mask, and the outlines span exactly the mask's box.
TEST(CliExports, PolygonsOutlineTheMask) {
  ScratchDir s("export_polygons");
  const CliResult r = run_cli(micro_segment(s, {"--point", "110,41", "--polygons", s.file("p.json"),
                                                "--polygon-tolerance", "0"}),
                              s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const RgbImage mask = decode_image_file(s.file("mask.png"));
  int x0 = kWidth, y0 = kHeight, x1 = -1, y1 = -1;
  for (int y = 0; y < kHeight; ++y)
    for (int x = 0; x < kWidth; ++x)
      if (mask_at(mask, x, y)) {
        x0 = std::min(x0, x), y0 = std::min(y0, y), x1 = std::max(x1, x), y1 = std::max(y1, y);
      }
  ASSERT_GE(x1, 0) << "the prompt should give a non-empty mask";
  const nlohmann::json doc = nlohmann::json::parse(read_text(s.file("p.json")));
  EXPECT_EQ(doc["width"], kWidth);
  ASSERT_FALSE(doc["polygons"].empty());
  int px0 = kWidth, py0 = kHeight, px1 = -1, py1 = -1;
  for (const nlohmann::json& polygon : doc["polygons"]) {
    for (const nlohmann::json& point : polygon["exterior"]) {
      const int x = point[0].get<int>(), y = point[1].get<int>();
      ASSERT_TRUE(mask_at(mask, x, y)) << x << "," << y;
      px0 = std::min(px0, x), py0 = std::min(py0, y), px1 = std::max(px1, x), py1 = std::max(py1, y);
    }
  }
  EXPECT_EQ(std::vector<int>({px0, py0, px1, py1}), std::vector<int>({x0, y0, x1, y1}));
  // A coarser tolerance keeps fewer vertices.
  const CliResult coarse = run_cli(micro_segment(s, {"--point", "110,41", "--polygons", s.file("q.json"),
                                                     "--polygon-tolerance", "3"}),
                                   s);
  ASSERT_EQ(coarse.exit_code, 0) << coarse.err;
  const nlohmann::json simplified = nlohmann::json::parse(read_text(s.file("q.json")));
  EXPECT_LT(simplified["polygons"][0]["exterior"].size(), doc["polygons"][0]["exterior"].size());
}

// Pillow reduces 16-bit channels to 8 bits before the model sees them; the user is told.
TEST(CliExports, SixteenBitPhotoGetsANote) {
  ScratchDir s("export_16bit");
  PngSpec spec;
  spec.width = 40;
  spec.height = 30;
  spec.color_type = PNG_COLOR_TYPE_RGB;
  spec.bit_depth = 16;
  for (int i = 0; i < spec.width * spec.height * 3; ++i) spec.samples.push_back((i * 977) % 65536);
  const Bytes png = encode_test_png(spec);
  std::ofstream(s.file("deep.png"), std::ios::binary).write(reinterpret_cast<const char*>(png.data()),
                                                            static_cast<std::streamsize>(png.size()));
  CliResult r = run_cli(micro_segment(s, {"--point", "20,15"}, s.file("deep.png")), s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("has 16-bit channels; they are reduced to 8 bits as Pillow"), std::string::npos) << r.err;
  r = run_cli(micro_segment(s, {"--point", "20,15"}), s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("16-bit"), std::string::npos) << r.err;
  // encode (and everything) read the photo the same way.
  r = run_cli({"encode", "--model", micro_pt(), "--config", micro_yaml(), "--image", s.file("deep.png"), "--out",
               s.file("f.safetensors")},
              s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("has 16-bit channels; they are reduced to 8 bits as Pillow"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace sam2rt::testing
