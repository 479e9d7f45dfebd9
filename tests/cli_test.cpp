// End-to-end runs of the sam2rt binary on the main paths of the fixtures. The
// bad inputs are catalogued in robustness_catalogue_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>
#include <sched.h>
#include <sys/stat.h>

#include "cli_goldens.h"
#include "cli_runner.h"
#include "scoped_environment.h"
#include "core/tensor_compare.h"
#include "io/image.h"
#include "io/safetensors.h"
#include "kernels/matmul.h"

namespace sam2rt::testing {
namespace {

std::string micro_pt() { return fixtures_dir() + "/micro/micro.pt"; }
std::string micro_yaml() { return fixtures_dir() + "/micro/sam2.1_micro.yaml"; }
std::string micro_image() { return fixtures_dir() + "/images/chelsea_288x112.png"; }

// A failed run exits nonzero and ends with exactly one line "sam2rt: error: ..." naming the problem.
void expect_error(const CliResult& r, const std::string& fragment) {
  EXPECT_NE(r.exit_code, 0) << r.out << r.err;
  const size_t start = r.err.find("sam2rt: error: ");
  ASSERT_NE(start, std::string::npos) << "stderr was: " << r.err;
  const std::string line = r.err.substr(start);
  EXPECT_EQ(std::count(line.begin(), line.end(), '\n'), 1) << "error should be one final line: " << r.err;
  EXPECT_NE(line.find(fragment), std::string::npos) << "stderr was: " << r.err;
}

std::vector<std::string> micro_segment(const ScratchDir& s, std::vector<std::string> extra) {
  std::vector<std::string> args = {"segment", "--model", micro_pt(), "--config", micro_yaml(),
                                   "--image", micro_image(), "--out", s.file("mask.png")};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// The lines of `text` after the line `heading`, up to the first empty line.
std::vector<std::string> lines_under(const std::string& text, const std::string& heading) {
  std::vector<std::string> lines;
  size_t start = text.find(heading + "\n");
  if (start == std::string::npos) return lines;
  start += heading.size() + 1;
  while (start < text.size()) {
    const size_t end = std::min(text.find('\n', start), text.size());
    if (end == start) break;
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

TEST(Cli, HelpListsEachCommandInOneLine) {
  ScratchDir s("help");
  CliResult r = run_cli({"--help"}, s);
  EXPECT_EQ(r.exit_code, 0);
  const std::vector<std::string> commands = {"encode", "segment", "track", "everything", "compare", "bench", "serve", "download"};
  const std::vector<std::string> listed = lines_under(r.out, "Subcommands:");
  ASSERT_EQ(listed.size(), commands.size()) << r.out;
  for (size_t i = 0; i < commands.size(); ++i) {
    EXPECT_EQ(listed[i].rfind("  " + commands[i] + " ", 0), 0u) << listed[i];
    EXPECT_LE(listed[i].size(), 100u) << listed[i];
  }
  // The details are in the command's own help.
  r = run_cli({"everything", "--help"}, s);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("SAM2RT_PROFILE=1"), std::string::npos) << r.out;
}

TEST(Cli, HelpExplainsCommands) {
  ScratchDir s("help");
  CliResult r = run_cli({"segment", "--help"}, s);
  EXPECT_EQ(r.exit_code, 0);
  for (const char* word : {"--point", "--box", "--synthetic-weights", "--variant", "--mask-input", "--logits"}) {
    EXPECT_NE(r.out.find(word), std::string::npos) << word;
  }
}

// The micro golden run p1_point.mm through the whole CLI, from the photo.
TEST(Cli, MicroSegmentMatchesGolden) {
  ScratchDir s("microseg");
  const CliResult r = expect_micro_click_golden(s, {"--json", s.file("r.json"), "--overlay", s.file("o.png")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::filesystem::exists(s.file("o.png")));
  const std::string json = read_text(s.file("r.json"));
  EXPECT_NE(json.find("\"iou\""), std::string::npos);
  EXPECT_NE(json.find("\"object_score_logit\""), std::string::npos);
}

TEST(Cli, EncodeThenSegmentWithFeaturesMatchesDirectRun) {
  ScratchDir s("features");
  CliResult r = run_cli({"encode", "--model", micro_pt(), "--config", micro_yaml(), "--image", micro_image(), "--out",
                         s.file("f.safetensors"), "--all-features", "--pos-enc"},
                        s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The encode output is the golden's own naming, so compare can check it directly.
  r = run_cli({"compare", s.file("f.safetensors"), fixtures_dir() + "/micro/golden.safetensors"}, s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("neck.level2"), std::string::npos);
  EXPECT_NE(r.out.find("image_embed"), std::string::npos);
  r = run_cli({"compare", s.file("f.safetensors"), fixtures_dir() + "/micro/golden.safetensors", "--keys", "nope"}, s);
  EXPECT_EQ(r.exit_code, 1);

  r = run_cli(micro_segment(s, {"--box", "80,15,140,65", "--features", s.file("f.safetensors"), "--logits",
                                s.file("a.safetensors")}),
              s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_cli(micro_segment(s, {"--box", "80,15,140,65", "--logits", s.file("b.safetensors")}), s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  SafetensorsFile a = read_safetensors(s.file("a.safetensors"));
  SafetensorsFile b = read_safetensors(s.file("b.safetensors"));
  EXPECT_EQ(compare_tensors(a.tensors.at("masks"), b.tensors.at("masks")).max_abs_err, 0.0);

  // The features belong to a 288x112 photo: another photo is refused.
  r = run_cli({"segment", "--model", micro_pt(), "--config", micro_yaml(), "--image",
               fixtures_dir() + "/images/chelsea.png", "--features", s.file("f.safetensors"), "--point", "5,5",
               "--out", s.file("m.png")},
              s);
  expect_error(r, "belongs to a 288x112 image");
}

// Features of other weights or another config give garbage masks: refused, naming both sides.
TEST(Cli, FeaturesOfAnotherModelAreRefusedUnlessForced) {
  ScratchDir s("features_other");
  CliResult r = run_cli({"encode", "--model", micro_pt(), "--config", micro_yaml(), "--image", micro_image(), "--out",
                         s.file("f.safetensors")},
                        s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string features = s.file("f.safetensors");
  std::vector<std::string> other_weights = {"segment", "--synthetic-weights", "1", "--config", micro_yaml(),
                                            "--image", micro_image(), "--features", features,
                                            "--point", "110,41", "--out", s.file("m.png")};
  r = run_cli(other_weights, s);
  expect_error(r, "were made with weights ");
  EXPECT_NE(r.err.find(", but this model has weights "), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(s.file("m.png")));
  other_weights.push_back("--force-features");
  r = run_cli(other_weights, s);
  EXPECT_EQ(r.exit_code, 0) << r.err;

  std::string yaml = read_text(micro_yaml());
  yaml.replace(yaml.find("global_att_blocks: [4]"), 22, "global_att_blocks: [3]");
  std::ofstream(s.file("changed.yaml")) << yaml;
  r = run_cli({"segment", "--model", micro_pt(), "--config", s.file("changed.yaml"), "--image", micro_image(),
               "--features", features, "--point", "110,41", "--out", s.file("m.png")},
              s);
  expect_error(r, "sam2.1_micro.yaml' (hash ");
  EXPECT_NE(r.err.find("changed.yaml' (hash "), std::string::npos) << r.err;
}

// The overlay's format follows its extension; a mask stays PNG (lossless).
TEST(Cli, OutputFormatFollowsTheExtension) {
  ScratchDir s("output_format");
  CliResult r = run_cli(micro_segment(s, {"--point", "110,41", "--overlay", s.file("o.JPG")}), s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string jpeg = read_text(s.file("o.JPG"));
  ASSERT_GE(jpeg.size(), 3u);
  EXPECT_EQ(jpeg.substr(0, 3), "\xff\xd8\xff");
  const RgbImage overlay = decode_image_file(s.file("o.JPG"));
  EXPECT_EQ(overlay.width, 288);
  EXPECT_EQ(overlay.height, 112);
  EXPECT_EQ(read_text(s.file("mask.png")).substr(1, 3), "PNG");

  r = run_cli({"segment", "--model", micro_pt(), "--config", micro_yaml(), "--image", micro_image(), "--point",
               "110,41", "--out", s.file("m.jpg")},
              s);
  expect_error(r, "a mask is written as PNG only");
  EXPECT_FALSE(std::filesystem::exists(s.file("m.jpg")));
  r = run_cli(micro_segment(s, {"--point", "110,41", "--overlay", s.file("o.bmp")}), s);
  expect_error(r, "unsupported extension '.bmp'; name it .png, .jpg or .jpeg");
}

// Outputs get 0666 less the umask, like any newly created file (mkstemp alone gives 0600).
TEST(Cli, OutputFilesFollowTheUmask) {
  ScratchDir s("umask");
  for (const auto& [mask, expected] : {std::pair{mode_t{022}, 0644}, std::pair{mode_t{027}, 0640}}) {
    const mode_t saved = ::umask(mask);
    const CliResult r = run_cli(micro_segment(s, {"--point", "110,41", "--json", s.file("r.json")}), s);
    ::umask(saved);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const char* file : {"mask.png", "r.json"}) {
      struct stat info {};
      ASSERT_EQ(::stat(s.file(file).c_str(), &info), 0);
      EXPECT_EQ(info.st_mode & 0777, static_cast<mode_t>(expected)) << file << " under umask " << mask;
    }
  }
}

TEST(Cli, JsonDashWritesTheReportToStdout) {
  ScratchDir s("json_stdout");
  const CliResult r = run_cli(micro_segment(s, {"--point", "110,41", "--json", "-"}), s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json report = nlohmann::json::parse(r.out);  // stdout is the JSON alone
  EXPECT_EQ(report["width"], 288);
  EXPECT_EQ(report["masks"].size(), 1u);
  EXPECT_NE(r.err.find("mask 0 of 1"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(s.file("-")));
}

// Areas of the 8-connected components of the pixels of map `index` of an [M, H, W]
// logits tensor that are above 0 (`foreground`) or not.
std::vector<int64_t> component_areas_of(const Tensor& logits, int64_t index, bool foreground) {
  const int64_t h = logits.dim(1), w = logits.dim(2);
  const float* map = logits.data() + index * h * w;
  std::vector<uint8_t> seen(static_cast<size_t>(h * w), 0);
  std::vector<int64_t> areas;
  for (int64_t start = 0; start < h * w; ++start) {
    if (seen[static_cast<size_t>(start)] || (map[start] > 0) != foreground) continue;
    int64_t area = 0;
    std::vector<int64_t> stack = {start};
    seen[static_cast<size_t>(start)] = 1;
    while (!stack.empty()) {
      const int64_t at = stack.back();
      stack.pop_back();
      ++area;
      for (int64_t dy = -1; dy <= 1; ++dy) {
        for (int64_t dx = -1; dx <= 1; ++dx) {
          const int64_t y = at / w + dy, x = at % w + dx;
          if (y < 0 || y >= h || x < 0 || x >= w) continue;
          const int64_t next = y * w + x;
          if (seen[static_cast<size_t>(next)] || (map[next] > 0) != foreground) continue;
          seen[static_cast<size_t>(next)] = 1;
          stack.push_back(next);
        }
      }
    }
    areas.push_back(area);
  }
  return areas;
}

// SAM2ImagePredictor's max_sprinkle_area / max_hole_area: object (background)
// regions of at most that many low-res pixels are removed (filled) before the
// upsampling. Mask 0 of this multimask prompt is specks; mask 2 has holes.
TEST(Cli, HoleAndSprinkleFillingFollowTheDefinition) {
  ScratchDir s("fill");
  auto run = [&](const std::string& name, std::vector<std::string> extra) {
    std::vector<std::string> args = {"--point", "110,41", "--multimask", "--logits", s.file(name)};
    args.insert(args.end(), extra.begin(), extra.end());
    const CliResult r = run_cli(micro_segment(s, args), s);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return read_safetensors(s.file(name));
  };
  const SafetensorsFile plain = run("plain.safetensors", {});
  const Tensor& low_res = plain.tensors.at("low_res_masks");  // unfilled, as the official predict returns them
  std::vector<int64_t> specks = component_areas_of(low_res, 0, true);
  std::sort(specks.begin(), specks.end());
  ASSERT_GE(specks.size(), 3u);
  ASSERT_LT(specks[specks.size() - 2], specks.back()) << "the largest region must be unique";
  const Tensor& plain_masks = plain.tensors.at("masks");
  const int64_t plain_regions = static_cast<int64_t>(component_areas_of(plain_masks, 0, true).size());
  ASSERT_GT(plain_regions, 1);

  // Every region but the largest is at most its area: one region is left.
  const SafetensorsFile sprinkled = run("sprinkle.safetensors", {"--max-sprinkle-area", std::to_string(specks[specks.size() - 2])});
  EXPECT_EQ(component_areas_of(sprinkled.tensors.at("masks"), 0, true).size(), 1u);
  EXPECT_EQ(compare_tensors(sprinkled.tensors.at("low_res_masks"), low_res).max_abs_err, 0.0);

  // Holes: the background of token 2, border regions included, fits in the area.
  const std::vector<int64_t> holes = component_areas_of(low_res, 2, false);
  ASSERT_GE(holes.size(), 2u);
  const int64_t background = std::accumulate(holes.begin(), holes.end(), int64_t{0});
  const SafetensorsFile filled = run("holes.safetensors", {"--max-hole-area", std::to_string(background)});
  EXPECT_EQ(component_areas_of(filled.tensors.at("masks"), 2, false).size(), 0u);
  EXPECT_GT(component_areas_of(plain_masks, 2, false).size(), 0u);
  // A smaller area keeps the largest background region.
  const int64_t largest_hole = *std::max_element(holes.begin(), holes.end());
  const SafetensorsFile partly = run("partly.safetensors", {"--max-hole-area", std::to_string(largest_hole - 1)});
  EXPECT_GE(component_areas_of(partly.tensors.at("masks"), 2, false).size(), 1u);
  EXPECT_LT(component_areas_of(partly.tensors.at("masks"), 2, false).size(),
            component_areas_of(plain_masks, 2, false).size());
}

TEST(Cli, MistypedNamesGetASuggestionAndTheHelpToRead) {
  ScratchDir s("suggest");
  CliResult r = run_cli({"segmnt", "--point", "1,2"}, s);
  EXPECT_EQ(r.exit_code, 2);
  expect_error(r, "unknown command 'segmnt'; did you mean 'segment'? (see `sam2rt --help`)");
  // Asking for an unknown command's help is the same error, not the top-level help.
  r = run_cli({"frobnicate", "--help"}, s);
  EXPECT_EQ(r.exit_code, 2);
  expect_error(r, "unknown command 'frobnicate' (see `sam2rt --help`)");
  EXPECT_EQ(r.out, "");
  r = run_cli({"--help", "evrything"}, s);
  EXPECT_EQ(r.exit_code, 2);
  expect_error(r, "unknown command 'evrything'; did you mean 'everything'?");
  r = run_cli({"benhc", "--help"}, s);
  EXPECT_EQ(r.exit_code, 2);
  expect_error(r, "unknown command 'benhc'; did you mean 'bench'?");
  r = run_cli(micro_segment(s, {"--poin", "110,41"}), s);
  EXPECT_EQ(r.exit_code, 2);
  expect_error(r, "unknown option '--poin' for `sam2rt segment`; did you mean '--point'? (see `sam2rt segment --help`)");
  r = run_cli({"encode", "--model", micro_pt(), "--image", micro_image(), "--out=x", "--feature-dtyp=float16"}, s);
  expect_error(r, "did you mean '--feature-dtype'?");
  // Nothing close: no guess, still the help to read.
  r = run_cli(micro_segment(s, {"--zzzzzzzz"}), s);
  expect_error(r, "unknown option '--zzzzzzzz' for `sam2rt segment` (see `sam2rt segment --help`)");
  // Other usage errors point to the command's help too.
  r = run_cli({"segment", "--synthetic-weights", "0", "--out", s.file("m.png")}, s);
  EXPECT_EQ(r.exit_code, 2);
  expect_error(r, "--image is required (see `sam2rt segment --help`)");
}

TEST(Cli, CompareFailsOutsideTheTolerances) {
  ScratchDir s("compare_tolerance");
  Tensor a({1, 4}), b({1, 4});
  for (int i = 0; i < 4; ++i) a[i] = b[i] = static_cast<float>(i + 1);
  b[3] += 0.25f;
  write_safetensors(s.file("a.safetensors"), {{"t", a}}, {});
  write_safetensors(s.file("b.safetensors"), {{"t", b}}, {});
  const std::vector<std::string> compare = {"compare", s.file("a.safetensors"), s.file("b.safetensors")};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = compare;
    args.insert(args.end(), extra.begin(), extra.end());
    return run_cli(args, s);
  };
  EXPECT_EQ(with({}).exit_code, 0);
  EXPECT_EQ(with({"--max-abs", "0.25"}).exit_code, 0);
  CliResult r = with({"--max-abs", "0.2"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("OUT OF TOLERANCE"), std::string::npos) << r.out;
  expect_error(r, "1 of 1 tensors out of tolerance (max|err| <= 0.2");
  EXPECT_EQ(with({"--one-minus-cos", "0.01"}).exit_code, 0);
  EXPECT_EQ(with({"--one-minus-cos", "1e-6"}).exit_code, 1);
}

// --point takes a list of clicks as well as repeated options: the same prompt.
TEST(Cli, PointTakesAList) {
  ScratchDir s("point_list");
  CliResult r = run_cli(micro_segment(s, {"--point", "110,41", "203,55,0", "--logits", s.file("list.safetensors")}), s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_cli(micro_segment(s, {"--point", "110,41", "--point", "203,55,0", "--logits", s.file("repeated.safetensors")}),
              s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_cli(micro_segment(s, {"--point", "110,41", "--logits", s.file("one.safetensors")}), s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Tensor list = read_safetensors(s.file("list.safetensors")).tensors.at("masks");
  EXPECT_EQ(compare_tensors(list, read_safetensors(s.file("repeated.safetensors")).tensors.at("masks")).max_abs_err,
            0.0);
  EXPECT_GT(compare_tensors(list, read_safetensors(s.file("one.safetensors")).tensors.at("masks")).max_abs_err, 0.0);
}

TEST(Cli, MaskInputFromEarlierLogitsReproducesGolden) {
  ScratchDir s("maskinput");
  CliResult r = run_cli(micro_segment(s, {"--point", "110,41", "--multimask", "--logits", s.file("p1.safetensors")}), s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_cli(micro_segment(s, {"--point", "203,55", "--multimask", "--mask-input", s.file("p1.safetensors"),
                                "--logits", s.file("p5.safetensors")}),
              s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  SafetensorsFile golden = read_safetensors(fixtures_dir() + "/micro/golden.safetensors");
  SafetensorsFile ours = read_safetensors(s.file("p5.safetensors"));
  EXPECT_LE(compare_tensors(ours.tensors.at("masks"), golden.tensors.at("p5_point_mask.mm.masks")).max_abs_err, 1e-4);
}

std::vector<std::string> micro_encode(const ScratchDir& s, const std::string& out, std::vector<std::string> extra) {
  std::vector<std::string> args = {"encode", "--model", micro_pt(), "--config", micro_yaml(),
                                   "--image", micro_image(), "--out", s.file(out)};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// encode writes the decoder-ready set by default (the neck's levels on request),
// stored as float32 or narrowed to bfloat16/float16, and says how large the file is.
TEST(Cli, EncodeWritesTheDecoderReadySetInTheChosenDtype) {
  ScratchDir s("feature_dtype");
  CliResult r = run_cli(micro_encode(s, "f32.safetensors", {}), s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(" MiB, float32)"), std::string::npos) << r.out;
  const SafetensorsFile f32 = read_safetensors(s.file("f32.safetensors"));
  std::vector<std::string> keys;
  for (const auto& entry : f32.tensors) keys.push_back(entry.first);
  EXPECT_EQ(keys, (std::vector<std::string>{"feat_s0", "feat_s1", "image_embed"}));
  EXPECT_EQ(f32.metadata.at("feature_dtype"), "float32");
  r = run_cli(micro_encode(s, "all.safetensors", {"--all-features"}), s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_safetensors(s.file("all.safetensors")).tensors.count("neck.level1"), 1u);

  const auto f32_bytes = std::filesystem::file_size(s.file("f32.safetensors"));
  const std::vector<std::tuple<std::string, std::string, double>> dtypes = {{"bfloat16", "BF16", 1.0 / 256},
                                                                           {"float16", "F16", 1.0 / 2048}};
  for (const auto& [dtype, stored, max_relative_error] : dtypes) {
    SCOPED_TRACE(dtype);
    const std::string file = s.file(dtype + ".safetensors");
    r = run_cli(micro_encode(s, dtype + ".safetensors", {"--feature-dtype", dtype}), s);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find(" MiB, " + dtype + ")"), std::string::npos) << r.out;
    EXPECT_NE(read_text(file).find("\"dtype\":\"" + stored + "\""), std::string::npos);
    EXPECT_LT(std::filesystem::file_size(file), f32_bytes / 2 + 4096);
    const SafetensorsFile narrow = read_safetensors(file);
    EXPECT_EQ(narrow.metadata.at("feature_dtype"), dtype);
    for (const auto& [key, exact] : f32.tensors) {
      const Tensor& widened = narrow.tensors.at(key);
      ASSERT_EQ(widened.shape(), exact.shape());
      double worst = 0.0;  // rounding to nearest: half a step, 2^-8 (bfloat16) or 2^-11 (float16) of the value
      for (int64_t i = 0; i < exact.numel(); ++i) {
        if (std::fabs(exact[i]) < 1e-4f) continue;  // float16 subnormals have absolute steps
        worst = std::max(worst, std::fabs(static_cast<double>(widened[i]) - exact[i]) / std::fabs(exact[i]));
      }
      EXPECT_LE(worst, max_relative_error) << key;
      EXPECT_GT(worst, 0.0) << key << " was not narrowed";
    }
    r = run_cli(micro_segment(s, {"--point", "110,41", "--features", file}), s);
    EXPECT_EQ(r.exit_code, 0) << r.err;
  }
}

// A features file says which arithmetic made it; bf16 really changes the numbers.
TEST(Cli, EncodeRecordsPrecisionInMetadata) {
  if (!bf16_matmul_supported()) GTEST_SKIP() << "oneDNN cannot run bfloat16 on this CPU";
  ScratchDir s("precision_meta");
  CliResult r = run_cli(micro_encode(s, "fp32.safetensors", {}), s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_cli(micro_encode(s, "bf16.safetensors", {"--precision", "bf16"}), s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const SafetensorsFile fp32 = read_safetensors(s.file("fp32.safetensors"));
  const SafetensorsFile bf16 = read_safetensors(s.file("bf16.safetensors"));
  EXPECT_EQ(fp32.metadata.at("precision"), "fp32");
  EXPECT_EQ(bf16.metadata.at("precision"), "bf16");
  EXPECT_GT(compare_tensors(bf16.tensors.at("image_embed"), fp32.tensors.at("image_embed")).max_abs_err, 0.0);

  // segment reuses the bf16 features; a second --precision would not apply to them.
  r = run_cli(micro_segment(s, {"--point", "110,41", "--features", s.file("bf16.safetensors")}), s);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = run_cli(micro_segment(s, {"--point", "110,41", "--features", s.file("bf16.safetensors"), "--precision", "bf16"}),
              s);
  expect_error(r, "--precision");
}

TEST(Cli, UnknownPrecisionIsAUsageError) {
  ScratchDir s("precision_bad");
  // fp16 is known (--device vulkan only: vulkan_cli_test.cpp); fp8 is not.
  for (const auto& args : {micro_encode(s, "f.safetensors", {"--precision", "fp8"}),
                           micro_segment(s, {"--point", "110,41", "--precision", "fp8"})}) {
    SCOPED_TRACE(args[0]);
    const CliResult r = run_cli(args, s);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    expect_error(r, "--precision: fp8 not in {fp32,bf16,fp16}");
    EXPECT_FALSE(std::filesystem::exists(s.file("f.safetensors")));
    EXPECT_FALSE(std::filesystem::exists(s.file("mask.png")));
  }
}

// A bf16 run writes its mask like an fp32 one, from logits that are not the fp32 ones.
TEST(Cli, SegmentBf16WritesAMask) {
  if (!bf16_matmul_supported()) GTEST_SKIP() << "oneDNN cannot run bfloat16 on this CPU";
  ScratchDir s("precision_segment");
  CliResult r = run_cli(
      micro_segment(s, {"--point", "110,41", "--precision", "bf16", "--logits", s.file("bf16.safetensors")}), s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const RgbImage mask = decode_image_file(s.file("mask.png"));
  EXPECT_EQ(mask.width, 288);
  EXPECT_EQ(mask.height, 112);
  r = run_cli(micro_segment(s, {"--point", "110,41", "--logits", s.file("fp32.safetensors")}), s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Tensor bf16 = read_safetensors(s.file("bf16.safetensors")).tensors.at("masks");
  const Tensor fp32 = read_safetensors(s.file("fp32.safetensors")).tensors.at("masks");
  ASSERT_EQ(bf16.shape(), fp32.shape());
  EXPECT_GT(compare_tensors(bf16, fp32).max_abs_err, 0.0);
}

// oneDNN capped below AVX-512 (as on an AVX2-only CPU) cannot run bfloat16
// matmuls: the user gets one line that says what to use instead.
TEST(Cli, Bf16WithoutAvx512SaysToUseFp32) {
  ScratchDir s("precision_avx2");
  const char* outer = std::getenv("ONEDNN_MAX_CPU_ISA");
  const std::string saved = outer ? outer : "";
  ::setenv("ONEDNN_MAX_CPU_ISA", "AVX2", 1);
  const CliResult bf16 = run_cli(micro_segment(s, {"--point", "110,41", "--precision", "bf16"}), s);
  const CliResult fp32 = run_cli(micro_segment(s, {"--point", "110,41"}), s);
  if (outer) {
    ::setenv("ONEDNN_MAX_CPU_ISA", saved.c_str(), 1);
  } else {
    ::unsetenv("ONEDNN_MAX_CPU_ISA");
  }
  expect_error(bf16, "use --precision fp32");
  EXPECT_EQ(fp32.exit_code, 0) << fp32.err;
}

TEST(Cli, BenchJsonHoldsTheDocumentedFields) {
  ScratchDir s("bench_json");
  const CliResult r = run_cli({"bench", "--model", micro_pt(), "--config", micro_yaml(), "--warmup", "0", "--runs",
                               "2", "--batch", "3", "--everything-runs", "1", "--points-per-side", "2", "--json",
                               s.file("bench.json")},
                              s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json report = nlohmann::json::parse(read_text(s.file("bench.json")));
  for (const char* key : {"variant", "precision", "threads", "load_ms", "encoder_gflops", "peak_rss_mb", "gemm_gflops",
                          "encoder_of_gemm", "encoder_executed_of_gemm", "encoder_gmac", "encoder_gmac_executed"}) {
    ASSERT_TRUE(report.contains(key)) << key;
  }
  // The CPU's GEMM rate timed after each encode, and the encoder's share of it
  // counted on the model's work and on the work executed.
  EXPECT_GT(report["gemm_gflops"].get<double>(), 0.0);
  EXPECT_GT(report["encoder_of_gemm"].get<double>(), report["encoder_executed_of_gemm"].get<double>());
  EXPECT_GT(report["encoder_executed_of_gemm"].get<double>(), 0.0);
  EXPECT_LT(report["encoder_gmac_executed"].get<double>(), report["encoder_gmac"].get<double>());
  EXPECT_EQ(report["everything"]["points_per_side"], 2);
  for (const char* timing : {"encoder_ms", "decoder_ms", "decoder_batch3_ms_per_prompt", "everything_ms"}) {
    ASSERT_TRUE(report.contains(timing)) << timing;
    for (const char* stat : {"min", "median", "mean", "max", "std"}) {
      EXPECT_TRUE(report[timing].contains(stat)) << timing << "." << stat;
    }
    EXPECT_LE(report[timing]["min"].get<double>(), report[timing]["median"].get<double>()) << timing;
    EXPECT_LE(report[timing]["median"].get<double>(), report[timing]["max"].get<double>()) << timing;
  }
  EXPECT_EQ(report["precision"], "fp32");
  EXPECT_GT(report["load_ms"].get<double>(), 0.0);
}

// Beside another busy program, compute threads that the kernel leaves on one CPU
// run at half speed (compute_thread_placement.h): bench pins one per CPU when
// its team fills the CPUs the process may use, and not otherwise.
TEST(Cli, BenchPinsOneComputeThreadPerCpu) {
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
  const int cpus = CPU_COUNT(&allowed);
  if (cpus < 2) GTEST_SKIP() << "one CPU: nothing to place";
  for (const char* name : {"OMP_PROC_BIND", "OMP_PLACES", "GOMP_CPU_AFFINITY"}) {
    if (std::getenv(name) != nullptr) GTEST_SKIP() << name << " is set: the user's placement is kept";
  }
  ScratchDir s("bench_pinned");
  const auto pinned = [&](const std::string& threads) {
    const CliResult r = run_cli({"bench", "--model", micro_pt(), "--config", micro_yaml(), "--warmup", "0", "--runs",
                                 "1", "--batch", "1", "--threads", threads, "--json", s.file("bench.json")},
                                s);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(read_text(s.file("bench.json")))["threads_pinned"].get<bool>();
  };
  EXPECT_TRUE(pinned(std::to_string(cpus)));
  EXPECT_FALSE(pinned("1"));
  {
    const ScopedEnvironment user_choice("OMP_PROC_BIND", "false");
    EXPECT_FALSE(pinned(std::to_string(cpus)));
  }
}

// Issue acceptance: one tiny prompt end to end from the photo, through the CLI.
TEST(CliTiny, BoxAndPointFromPhotoMatchesGolden) {
  ScratchDir s("tinyseg");
  CliResult r = run_cli({"segment", "--synthetic-weights", "0", "--variant", "tiny", "--image",
                         fixtures_dir() + "/images/astronaut.png", "--box", "71,22.75,426.75,493.75", "--point",
                         "361,251.5", "--out", s.file("mask.png"), "--logits", s.file("l.safetensors")},
                        s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  SafetensorsFile golden = read_safetensors(fixtures_dir() + "/tiny/golden.safetensors");
  SafetensorsFile ours = read_safetensors(s.file("l.safetensors"));
  const Tensor& logits = ours.tensors.at("masks");
  ASSERT_EQ(logits.shape(), (Shape{1, 512, 512}));
  EXPECT_LE(compare_tensors(decimate(logits, 8), golden.tensors.at("p4_box_point.sm.masks.dec8")).max_abs_err, 1e-4);
  EXPECT_LE(compare_tensors(ours.tensors.at("iou_predictions"), golden.tensors.at("p4_box_point.sm.iou_predictions"))
                .max_abs_err,
            1e-5);
  RgbImage mask = decode_image_file(s.file("mask.png"));
  RgbImage expected = decode_image_file(fixtures_dir() + "/tiny/masks/p4_box_point.sm.png");
  ASSERT_EQ(mask.pixels.size(), expected.pixels.size());
  // The golden logits are stored decimated, so pixels are exempt where our own
  // logit is within 2e-4 of 0 (covering every golden logit within 1e-4 of 0).
  int64_t differing = 0, exempt = 0;
  for (int64_t i = 0; i < 512 * 512; ++i) {
    if (mask.pixels[static_cast<size_t>(i * 3)] == expected.pixels[static_cast<size_t>(i * 3)]) continue;
    if (std::fabs(logits[i]) <= 2e-4) {
      ++exempt;
    } else {
      ++differing;
    }
  }
  EXPECT_EQ(differing, 0) << exempt << " pixels exempt";
}

}  // namespace
}  // namespace sam2rt::testing
