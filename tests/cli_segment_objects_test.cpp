// `segment` with several objects in one run: repeated --box and --prompts FILE.json.
// Each object must come out exactly as a one-object run with the same prompt gives it.
// Bad prompts files are in robustness_catalogue_test.cpp.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "core/tensor_compare.h"
#include "io/image.h"
#include "io/safetensors.h"

namespace sam2rt::testing {
namespace {

std::string micro_pt() { return fixtures_dir() + "/micro/micro.pt"; }
std::string micro_yaml() { return fixtures_dir() + "/micro/sam2.1_micro.yaml"; }
std::string micro_image() { return fixtures_dir() + "/images/chelsea_288x112.png"; }

std::vector<std::string> micro_segment(const std::string& out, std::vector<std::string> extra) {
  std::vector<std::string> args = {"segment", "--model", micro_pt(), "--config", micro_yaml(),
                                   "--image", micro_image(), "--out", out};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

Tensor logits_masks(const std::string& path) { return read_safetensors(path).tensors.at("masks"); }

// The name object `index` of a several-object run gives to a per-object output.
std::string numbered(const ScratchDir& s, const std::string& stem, size_t index, const std::string& extension) {
  std::string name = stem;
  name.append("_").append(std::to_string(index)).append(extension);
  return s.file(name);
}

// Runs one object alone; its masks and mask PNG are what the object of a
// several-object run must reproduce.
void expect_same_as_single_run(const ScratchDir& s, std::vector<std::string> prompt, size_t index) {
  const std::string single_mask = numbered(s, "single", index, ".png");
  const std::string single_logits = numbered(s, "single", index, ".safetensors");
  prompt.push_back("--logits");
  prompt.push_back(single_logits);
  const CliResult r = run_cli(micro_segment(single_mask, prompt), s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(compare_tensors(logits_masks(numbered(s, "l", index, ".safetensors")), logits_masks(single_logits))
                .max_abs_err,
            0.0)
      << "object " << index;
  EXPECT_EQ(read_text(numbered(s, "mask", index, ".png")), read_text(single_mask)) << "object " << index;
}

TEST(CliObjects, EachBoxIsAnObject) {
  ScratchDir s("objects_boxes");
  const std::vector<std::string> boxes = {"80,15,140,65", "10,10,60,90", "150,5,280,100"};
  CliResult r = run_cli(micro_segment(s.file("mask.png"), {"--box", boxes[0], "--box", boxes[1], boxes[2], "--logits",
                                                           s.file("l.safetensors"), "--json", s.file("r.json"),
                                                           "--overlay", s.file("o.png")}),
                        s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(std::filesystem::exists(s.file("mask.png"))) << "several objects write numbered masks only";
  EXPECT_FALSE(std::filesystem::exists(s.file("l.safetensors")));
  EXPECT_NE(r.out.find("3 objects"), std::string::npos) << r.out;
  for (size_t i = 0; i < boxes.size(); ++i) expect_same_as_single_run(s, {"--box", boxes[i]}, i);

  const nlohmann::json report = nlohmann::json::parse(read_text(s.file("r.json")));
  EXPECT_FALSE(report.contains("masks")) << "the masks are listed per object";
  ASSERT_EQ(report["objects"].size(), boxes.size());
  for (size_t i = 0; i < boxes.size(); ++i) {
    const nlohmann::json& object = report["objects"][i];
    EXPECT_EQ(object["index"], i);
    EXPECT_EQ(object["out"], numbered(s, "mask", i, ".png"));
    EXPECT_EQ(object["masks"].size(), 1u);
    EXPECT_EQ(object["best_index"], 0);
  }

  // The overlay tints every object, outlines its box and leaves the rest of the photo as it was.
  auto near_a_box_edge = [&](int x, int y) {
    for (const std::string& box : boxes) {
      int x0 = 0, y0 = 0, x1 = 0, y1 = 0;
      std::sscanf(box.c_str(), "%d,%d,%d,%d", &x0, &y0, &x1, &y1);
      const bool within_x = x >= x0 - 3 && x <= x1 + 3, within_y = y >= y0 - 3 && y <= y1 + 3;
      if ((within_x && (std::abs(y - y0) <= 3 || std::abs(y - y1) <= 3)) ||
          (within_y && (std::abs(x - x0) <= 3 || std::abs(x - x1) <= 3))) {
        return true;
      }
    }
    return false;
  };
  const RgbImage photo = decode_image_file(micro_image());
  const RgbImage overlay = decode_image_file(s.file("o.png"));
  ASSERT_EQ(overlay.pixels.size(), photo.pixels.size());
  std::vector<RgbImage> masks;
  for (size_t i = 0; i < boxes.size(); ++i) masks.push_back(decode_image_file(numbered(s, "mask", i, ".png")));
  std::vector<int64_t> area(boxes.size(), 0), tinted(boxes.size(), 0);
  for (size_t p = 0; p < photo.pixels.size(); p += 3) {
    const bool changed = !std::equal(&photo.pixels[p], &photo.pixels[p] + 3, &overlay.pixels[p]);
    bool in_any = false;
    for (size_t i = 0; i < masks.size(); ++i) {
      if (!masks[i].pixels[p]) continue;
      in_any = true;
      ++area[i];
      tinted[i] += changed;
    }
    const int x = static_cast<int>(p / 3) % photo.width, y = static_cast<int>(p / 3) / photo.width;
    if (!in_any && !near_a_box_edge(x, y)) {
      ASSERT_FALSE(changed) << "pixel " << x << "," << y << " lies outside every mask and box outline";
    }
  }
  for (size_t i = 0; i < boxes.size(); ++i) {
    ASSERT_GT(area[i], 0) << "object " << i;
    EXPECT_GE(tinted[i], area[i] * 9 / 10) << "object " << i;
  }
  // Each box is outlined in the overlay's box colour (yellow, api/overlay.h).
  for (const std::string& box : boxes) {
    int x0 = 0, y0 = 0;
    std::sscanf(box.c_str(), "%d,%d", &x0, &y0);
    const uint8_t* corner = &overlay.pixels[(static_cast<size_t>(y0) * overlay.width + x0) * 3];
    EXPECT_EQ(std::vector<int>(corner, corner + 3), (std::vector<int>{255, 210, 0})) << box;
  }
}

TEST(CliObjects, PromptsFileGivesEachObjectItsPointsBoxAndMaskInput) {
  ScratchDir s("objects_prompts");
  CliResult r = run_cli(micro_segment(s.file("first.png"), {"--point", "110,41", "--multimask", "--logits",
                                                            s.file("p1.safetensors")}),
                        s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // mask_input is relative to the prompts file, wherever the command runs.
  std::ofstream(s.file("prompts.json")) << R"([
    {"name": "cat", "points": [[110, 41]]},
    {"points": [[203, 55, 0], [110, 41]], "box": [80, 15, 140, 65]},
    {"points": [[203, 55]], "mask_input": "p1.safetensors"}
  ])";
  r = run_cli(micro_segment(s.file("mask.png"), {"--prompts", s.file("prompts.json"), "--multimask", "--logits",
                                                 s.file("l.safetensors"), "--json", s.file("r.json")}),
              s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_same_as_single_run(s, {"--point", "110,41", "--multimask"}, 0);
  expect_same_as_single_run(s, {"--point", "203,55,0", "110,41", "--box", "80,15,140,65", "--multimask"}, 1);
  expect_same_as_single_run(s, {"--point", "203,55", "--mask-input", s.file("p1.safetensors"), "--multimask"}, 2);
  // And the mask-input object is the golden's p5 case.
  const SafetensorsFile golden = read_safetensors(fixtures_dir() + "/micro/golden.safetensors");
  EXPECT_LE(compare_tensors(logits_masks(s.file("l_2.safetensors")), golden.tensors.at("p5_point_mask.mm.masks"))
                .max_abs_err,
            1e-4);

  const nlohmann::json report = nlohmann::json::parse(read_text(s.file("r.json")));
  ASSERT_EQ(report["objects"].size(), 3u);
  EXPECT_EQ(report["objects"][0]["name"], "cat");
  EXPECT_FALSE(report["objects"][1].contains("name"));
  for (const auto& object : report["objects"]) EXPECT_EQ(object["masks"].size(), 3u);
}

TEST(CliObjects, HelpDocumentsObjectsAndExports) {
  ScratchDir s("objects_help");
  const CliResult r = run_cli({"segment", "--help"}, s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* text : {"--prompts FILE.json: a list with one entry per object", "\"points\": [[X, Y], [X, Y, LABEL]",
                           "\"box\": [X0, Y0, X1, Y1]", "\"mask_input\"", "NAME_I.EXT", "--cutout", "--rle"}) {
    EXPECT_NE(r.out.find(text), std::string::npos) << text;
  }
}

// One object keeps the one-object report: no "objects" list, no numbered files.
TEST(CliObjects, OneBoxKeepsTheSingleObjectOutputs) {
  ScratchDir s("objects_one");
  const CliResult r = run_cli(micro_segment(s.file("mask.png"), {"--box", "80,15,140,65", "--json", s.file("r.json")}), s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::filesystem::exists(s.file("mask.png")));
  EXPECT_FALSE(std::filesystem::exists(s.file("mask_0.png")));
  const nlohmann::json report = nlohmann::json::parse(read_text(s.file("r.json")));
  EXPECT_FALSE(report.contains("objects"));
  ASSERT_EQ(report["masks"].size(), 1u);
  EXPECT_FALSE(report["masks"][0].contains("segmentation")) << "RLE only with --rle";
}

}  // namespace
}  // namespace sam2rt::testing
