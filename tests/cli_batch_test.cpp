// Batch mode of `sam2rt everything` (--input-dir/--input-list): one output per
// image, a manifest, failures recorded without stopping the batch, reruns that
// only redo what is missing, and the COCO dataset file.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <map>

#include "cli_runner.h"
#include "io/mask_rle.h"
#include "io/png_writer.h"

namespace sam2rt::testing {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> everything_batch(const ScratchDir& s, std::vector<std::string> extra) {
  std::vector<std::string> args = {"everything",       "--config",
                                   fixtures_dir() + "/micro/sam2.1_micro.yaml",
                                   "--model",          fixtures_dir() + "/micro/micro.pt",
                                   "--input-dir",      s.file("in"),
                                   "--out-dir",        s.file("out"),
                                   "--points-per-side", "3",
                                   "--pred-iou-thresh", "0.3",
                                   "--stability-score-thresh", "0.3"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

std::map<std::string, nlohmann::json> manifest(const ScratchDir& s) {
  std::map<std::string, nlohmann::json> by_input;
  std::istringstream lines(read_text(s.file("out/manifest.jsonl")));
  for (std::string line; std::getline(lines, line);) {
    const nlohmann::json record = nlohmann::json::parse(line);
    by_input[fs::path(record["input"].get<std::string>()).filename().string()] = record;
  }
  return by_input;
}

TEST(CliBatch, EverythingOverAFolderWithACorruptImage) {
  ScratchDir s("batch_everything");
  fs::create_directories(s.path() / "in" / "nested");
  fs::copy_file(fixtures_dir() + "/images/chelsea_288x112.png", s.file("in/cat.png"));
  const std::vector<uint8_t> rgb(64 * 40 * 3, 90);
  write_png_rgb8(s.file("in/nested/flat.png"), rgb.data(), 64, 40);
  std::ofstream(s.file("in/broken.jpg")) << "not a jpeg";
  std::ofstream(s.file("in/notes.txt")) << "ignored: not an image name";

  CliResult r = run_cli(everything_batch(s, {"--coco", s.file("dataset.json")}), s, 300);
  EXPECT_EQ(r.exit_code, 1) << "a failed input makes the exit code nonzero: " << r.err;
  auto records = manifest(s);
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records["cat.png"]["status"], "ok");
  EXPECT_EQ(records["flat.png"]["status"], "ok");
  EXPECT_EQ(records["broken.jpg"]["status"], "error");
  EXPECT_NE(records["broken.jpg"]["error"].get<std::string>().find("not a PNG or JPEG"), std::string::npos);
  EXPECT_FALSE(fs::exists(s.file("out/broken.json")));
  ASSERT_TRUE(fs::exists(s.file("out/nested/flat.json")));  // the folder structure is kept
  const nlohmann::json cat = nlohmann::json::parse(read_text(s.file("out/cat.json")));
  EXPECT_EQ(cat["format"], "sam2-amg-1");
  EXPECT_EQ(cat["image_hw"], nlohmann::json({112, 288}));

  // The COCO file: both good images, every annotation's RLE decodes to its area.
  const nlohmann::json dataset = nlohmann::json::parse(read_text(s.file("dataset.json")));
  EXPECT_EQ(dataset["images"].size(), 2u);
  ASSERT_EQ(dataset["annotations"].size(), cat["masks"].size() +
                                               nlohmann::json::parse(read_text(s.file("out/nested/flat.json")))["masks"].size());
  for (const nlohmann::json& a : dataset["annotations"]) {
    const auto h = a["segmentation"]["size"][0].get<int64_t>(), w = a["segmentation"]["size"][1].get<int64_t>();
    const UncompressedRle rle = coco_rle_from_string(a["segmentation"]["counts"].get<std::string>(), h, w);
    EXPECT_EQ(rle_area(rle), a["area"].get<int64_t>());
  }

  // A rerun does only the missing work; --overwrite redoes everything.
  const auto cat_time = fs::last_write_time(s.file("out/cat.json"));
  r = run_cli(everything_batch(s, {}), s, 300);
  EXPECT_EQ(r.exit_code, 1);
  records = manifest(s);
  EXPECT_EQ(records["cat.png"]["status"], "skipped");
  EXPECT_EQ(records["flat.png"]["status"], "skipped");
  EXPECT_EQ(records["broken.jpg"]["status"], "error");
  EXPECT_EQ(fs::last_write_time(s.file("out/cat.json")), cat_time);
  fs::remove(s.file("in/broken.jpg"));
  fs::remove(s.file("out/nested/flat.json"));
  r = run_cli(everything_batch(s, {}), s, 300);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  records = manifest(s);
  EXPECT_EQ(records["cat.png"]["status"], "skipped");
  EXPECT_EQ(records["flat.png"]["status"], "ok");
  r = run_cli(everything_batch(s, {"--overwrite"}), s, 300);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(manifest(s)["cat.png"]["status"], "ok");
  EXPECT_EQ(read_text(s.file("out/cat.json")), cat.dump() + "\n") << "the same input gives the same bytes";
}

TEST(CliBatch, RefusesCollidingOutputsAndEmptyInputs) {
  ScratchDir s("batch_refusals");
  fs::create_directories(s.path() / "in");
  fs::create_directories(s.path() / "a");
  fs::create_directories(s.path() / "b");
  fs::copy_file(fixtures_dir() + "/images/chelsea_288x112.png", s.file("a/x.png"));
  fs::copy_file(fixtures_dir() + "/images/chelsea_288x112.png", s.file("b/x.png"));
  std::ofstream(s.file("list.txt")) << s.file("a/x.png") << "\n" << s.file("b/x.png") << "\n";
  std::vector<std::string> args = everything_batch(s, {});
  args[5] = "--input-list";
  args[6] = s.file("list.txt");
  CliResult r = run_cli(args, s, 60);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("would both write"), std::string::npos) << r.err;
  r = run_cli(everything_batch(s, {}), s, 60);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no .png/.jpg/.jpeg files under --input-dir"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace sam2rt::testing
