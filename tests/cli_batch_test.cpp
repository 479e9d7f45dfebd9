// Batch mode of `sam2rt encode` and `sam2rt everything` (--input-dir/--input-list):
// one output per image (for encode, the bytes of a one-image encode), a manifest,
// failures recorded without stopping the batch, reruns that only redo what is
// missing, and the COCO dataset file.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "cli_runner.h"
#include "io/jpeg_writer.h"
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

std::vector<std::string> micro_model() {
  return {"--config", fixtures_dir() + "/micro/sam2.1_micro.yaml", "--model", fixtures_dir() + "/micro/micro.pt"};
}

std::vector<std::string> encode_batch(const ScratchDir& s, std::vector<std::string> extra) {
  std::vector<std::string> args = {"encode", "--input-dir", s.file("in"), "--out-dir", s.file("out")};
  const std::vector<std::string> model = micro_model();
  args.insert(args.end(), model.begin(), model.end());
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// A photo with some structure (a gradient), so that images of different sizes encode differently.
std::vector<uint8_t> gradient(int width, int height) {
  std::vector<uint8_t> rgb(static_cast<size_t>(width) * height * 3);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      uint8_t* p = &rgb[(static_cast<size_t>(y) * width + x) * 3];
      p[0] = static_cast<uint8_t>(255 * x / width);
      p[1] = static_cast<uint8_t>(255 * y / height);
      p[2] = static_cast<uint8_t>((x * y) % 256);
    }
  }
  return rgb;
}

TEST(CliBatch, EncodeOverAFolderWritesWhatOneImageEncodeWrites) {
  ScratchDir s("batch_encode");
  fs::create_directories(s.path() / "in" / "nested");
  fs::copy_file(fixtures_dir() + "/images/chelsea_288x112.png", s.file("in/cat.png"));
  const std::vector<uint8_t> tall = gradient(90, 210);
  write_png_rgb8(s.file("in/nested/tall.png"), tall.data(), 90, 210);
  const std::vector<uint8_t> wide = gradient(300, 40);
  const std::vector<uint8_t> jpeg = encode_jpeg_rgb8(wide.data(), 300, 40, 90);
  std::ofstream(s.file("in/wide.jpg"), std::ios::binary).write(reinterpret_cast<const char*>(jpeg.data()),
                                                                static_cast<std::streamsize>(jpeg.size()));
  std::ofstream(s.file("in/broken.png")) << "\x89PNG\r\n\x1a\n truncated";

  CliResult r = run_cli(encode_batch(s, {}), s, 300);
  EXPECT_EQ(r.exit_code, 1) << "a failed input makes the exit code nonzero: " << r.err;
  EXPECT_NE(r.out.find("4 images: 3 done, 0 skipped, 1 failed"), std::string::npos) << r.out;
  auto records = manifest(s);
  ASSERT_EQ(records.size(), 4u);
  for (const char* name : {"cat.png", "tall.png", "wide.jpg"}) {
    EXPECT_EQ(records[name]["status"], "ok") << name;
    EXPECT_GT(records[name]["ms"].get<double>(), 0.0) << name;
    EXPECT_FALSE(records[name].contains("error")) << name;
  }
  EXPECT_EQ(records["broken.png"]["status"], "error");
  EXPECT_FALSE(records["broken.png"]["error"].get<std::string>().empty());
  EXPECT_EQ(records["tall.png"]["output"], s.file("out/nested/tall.safetensors"));
  EXPECT_FALSE(fs::exists(s.file("out/broken.safetensors")));

  // Each file has the bytes of `sam2rt encode --image X --out Y`.
  const std::map<std::string, std::string> outputs = {
      {"in/cat.png", "out/cat.safetensors"}, {"in/nested/tall.png", "out/nested/tall.safetensors"},
      {"in/wide.jpg", "out/wide.safetensors"}};
  std::map<std::string, std::string> bytes;
  for (const auto& [input, output] : outputs) {
    std::vector<std::string> args = {"encode", "--image", s.file(input), "--out", s.file("single.safetensors")};
    const std::vector<std::string> model = micro_model();
    args.insert(args.end(), model.begin(), model.end());
    ASSERT_EQ(run_cli(args, s, 120).exit_code, 0) << input;
    bytes[output] = read_text(s.file(output));
    EXPECT_EQ(bytes[output], read_text(s.file("single.safetensors"))) << input;
  }
  EXPECT_NE(bytes["out/cat.safetensors"], bytes["out/wide.safetensors"]);

  // A rerun skips the outputs that exist and redoes the missing one (and removes the
  // temporary file that a run killed while writing it would have left).
  const auto cat_time = fs::last_write_time(s.file("out/cat.safetensors"));
  fs::remove(s.file("out/wide.safetensors"));
  std::ofstream(s.file("out/wide.safetensors.tmp.Xy12Zw")) << "a killed run's partial write";
  std::ofstream(s.file("out/wide.safetensors.notes")) << "not a temporary of ours";
  r = run_cli(encode_batch(s, {}), s, 300);
  EXPECT_EQ(r.exit_code, 1);
  records = manifest(s);
  EXPECT_EQ(records["cat.png"]["status"], "skipped");
  EXPECT_EQ(records["tall.png"]["status"], "skipped");
  EXPECT_EQ(records["wide.jpg"]["status"], "ok");
  EXPECT_EQ(records["broken.png"]["status"], "error");
  EXPECT_EQ(fs::last_write_time(s.file("out/cat.safetensors")), cat_time);
  EXPECT_EQ(read_text(s.file("out/wide.safetensors")), bytes["out/wide.safetensors"]);
  EXPECT_FALSE(fs::exists(s.file("out/wide.safetensors.tmp.Xy12Zw")));
  EXPECT_TRUE(fs::remove(s.file("out/wide.safetensors.notes")));

  // --overwrite redoes every input, with the same bytes; nothing else is left in OUT.
  fs::remove(s.file("in/broken.png"));
  r = run_cli(encode_batch(s, {"--overwrite"}), s, 300);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  records = manifest(s);
  ASSERT_EQ(records.size(), 3u);
  for (const auto& [name, record] : records) EXPECT_EQ(record["status"], "ok") << name;
  for (const auto& [input, output] : outputs) EXPECT_EQ(read_text(s.file(output)), bytes[output]) << output;
  size_t files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(s.path() / "out")) files += entry.is_regular_file();
  EXPECT_EQ(files, 4u) << "three features files and the manifest, no temporaries";
}

TEST(CliBatch, EncodeRecordsTooLargeImagesAndUnwritableOutputsAndGoesOn) {
  ScratchDir s("batch_encode_failures");
  fs::create_directories(s.path() / "in" / "nested");
  fs::create_directories(s.path() / "out");
  const std::vector<uint8_t> small = gradient(64, 40);
  write_png_rgb8(s.file("in/nested/small.png"), small.data(), 64, 40);
  write_png_rgb8(s.file("in/small.png"), small.data(), 64, 40);
  fs::copy_file(fixtures_dir() + "/images/chelsea_288x112.png", s.file("in/large.png"));
  std::ofstream(s.file("out/nested")) << "a file where the output folder would go";
  const CliResult r =
      run_cli(encode_batch(s, {"--feature-dtype", "bfloat16", "--max-image-pixels", "20000"}), s, 300);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  std::map<std::string, nlohmann::json> by_input;  // both small.png have one file name: keyed by path
  std::istringstream lines(read_text(s.file("out/manifest.jsonl")));
  for (std::string line; std::getline(lines, line);) {
    const nlohmann::json record = nlohmann::json::parse(line);
    by_input[record["input"].get<std::string>()] = record;
  }
  ASSERT_EQ(by_input.size(), 3u);
  const nlohmann::json& unwritable = by_input[s.file("in/nested/small.png")];
  EXPECT_EQ(unwritable["status"], "error");
  EXPECT_NE(unwritable["error"].get<std::string>().find("nested"), std::string::npos) << unwritable;
  const nlohmann::json& large = by_input[s.file("in/large.png")];
  EXPECT_EQ(large["status"], "error");
  EXPECT_NE(large["error"].get<std::string>().find("20000"), std::string::npos) << large;
  EXPECT_EQ(by_input[s.file("in/small.png")]["status"], "ok");
  EXPECT_NE(read_text(s.file("out/small.safetensors")).find("\"feature_dtype\":\"bfloat16\""), std::string::npos);
}

TEST(CliBatch, EncodeRefusesMixedSingleAndBatchOptions) {
  ScratchDir s("batch_encode_usage");
  fs::create_directories(s.path() / "in");
  fs::copy_file(fixtures_dir() + "/images/chelsea_288x112.png", s.file("in/cat.png"));
  CliResult r = run_cli(encode_batch(s, {"--out", s.file("x.safetensors")}), s, 60);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--out is for one --image"), std::string::npos) << r.err;
  r = run_cli({"encode", "--input-dir", s.file("in"), "--synthetic-weights", "0"}, s, 60);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("needs --out-dir"), std::string::npos) << r.err;
  r = run_cli({"encode", "--image", s.file("in/cat.png"), "--synthetic-weights", "0"}, s, 60);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("give --image and --out"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(s.file("out")));
}

}  // namespace
}  // namespace sam2rt::testing
