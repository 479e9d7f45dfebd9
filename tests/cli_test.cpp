// End-to-end runs of the sam2rt binary on the main paths of the fixtures. The
// bad inputs are catalogued in robustness_catalogue_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
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

TEST(Cli, HelpExplainsCommands) {
  ScratchDir s("help");
  CliResult r = run_cli({"--help"}, s);
  EXPECT_EQ(r.exit_code, 0);
  for (const char* word : {"encode", "segment", "compare"}) EXPECT_NE(r.out.find(word), std::string::npos) << word;
  r = run_cli({"segment", "--help"}, s);
  EXPECT_EQ(r.exit_code, 0);
  for (const char* word : {"--point", "--box", "--synthetic-weights", "--variant", "--mask-input", "--logits"}) {
    EXPECT_NE(r.out.find(word), std::string::npos) << word;
  }
}

// The micro golden run p1_point.mm through the whole CLI, from the photo.
TEST(Cli, MicroSegmentMatchesGolden) {
  ScratchDir s("microseg");
  CliResult r = run_cli(micro_segment(s, {"--point", "110,41", "--multimask", "--logits", s.file("l.safetensors"),
                                          "--json", s.file("r.json"), "--overlay", s.file("o.png")}),
                        s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  SafetensorsFile golden = read_safetensors(fixtures_dir() + "/micro/golden.safetensors");
  SafetensorsFile ours = read_safetensors(s.file("l.safetensors"));
  for (const char* key : {"masks", "low_res_masks", "iou_predictions", "object_score_logits"}) {
    const Tensor& g = golden.tensors.at(std::string("p1_point.mm.") + key);
    const Tensor& o = ours.tensors.at(key);
    ASSERT_EQ(o.shape(), g.shape()) << key;
    EXPECT_LE(compare_tensors(o, g).max_abs_err, 1e-4) << key;
  }
  // --out holds the best (highest predicted IoU) mask; the golden PNG stacks all three.
  RgbImage mask = decode_image_file(s.file("mask.png"));
  RgbImage stacked = decode_image_file(fixtures_dir() + "/micro/masks/p1_point.mm.png");
  ASSERT_EQ(mask.width, 288);
  ASSERT_EQ(mask.height, 112);
  const Tensor& logits = golden.tensors.at("p1_point.mm.masks");
  const int best = 2;  // prompts.json best_index
  int64_t differing = 0;
  for (int64_t i = 0; i < 112 * 288; ++i) {
    const uint8_t expected = stacked.pixels[static_cast<size_t>((best * 112 * 288 + i) * 3)];
    if (mask.pixels[static_cast<size_t>(i * 3)] != expected && std::fabs(logits[best * 112 * 288 + i]) > 1e-4) {
      ++differing;
    }
  }
  EXPECT_EQ(differing, 0);
  EXPECT_TRUE(std::filesystem::exists(s.file("o.png")));
  const std::string json = read_text(s.file("r.json"));
  EXPECT_NE(json.find("\"iou\""), std::string::npos);
  EXPECT_NE(json.find("\"object_score_logit\""), std::string::npos);
}

TEST(Cli, EncodeThenSegmentWithFeaturesMatchesDirectRun) {
  ScratchDir s("features");
  CliResult r = run_cli({"encode", "--model", micro_pt(), "--config", micro_yaml(), "--image", micro_image(), "--out",
                         s.file("f.safetensors"), "--decoder-ready", "--pos-enc"},
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
                                   "--image", micro_image(), "--out", s.file(out), "--decoder-ready"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
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
  for (const auto& args : {micro_encode(s, "f.safetensors", {"--precision", "fp16"}),
                           micro_segment(s, {"--point", "110,41", "--precision", "fp16"})}) {
    SCOPED_TRACE(args[0]);
    const CliResult r = run_cli(args, s);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    expect_error(r, "--precision: fp16 not in {fp32,bf16}");
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
  for (const char* key : {"variant", "precision", "threads", "load_ms", "encoder_gflops", "peak_rss_mb"}) {
    EXPECT_TRUE(report.contains(key)) << key;
  }
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
