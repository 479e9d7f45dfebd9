#pragma once

// Golden checks of whole CLI runs shared by the CPU and the Vulkan tests:
// `segment` of the micro prompt p1_point.mm and `everything` of an amg/ case,
// each under the fixtures' own rule, with extra flags (such as --device).

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "core/tensor_compare.h"
#include "io/image.h"
#include "io/safetensors.h"

namespace sam2rt::testing {

// `segment --point 110,41 --multimask` on the micro photo and checkpoint: the
// logits within 1e-4 of the golden p1_point.mm, and the --out mask (the best of
// the three) equal to the golden PNG except where the golden logit is within 1e-4
// of the threshold. Returns the run for further checks of its outputs.
inline CliResult expect_micro_click_golden(const ScratchDir& s, const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"segment", "--model", fixtures_dir() + "/micro/micro.pt", "--config",
                                   fixtures_dir() + "/micro/sam2.1_micro.yaml", "--image",
                                   fixtures_dir() + "/images/chelsea_288x112.png", "--out", s.file("mask.png"),
                                   "--point", "110,41", "--multimask", "--logits", s.file("l.safetensors")};
  args.insert(args.end(), extra.begin(), extra.end());
  const CliResult r = run_cli(args, s, 600);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  if (r.exit_code != 0) return r;
  SafetensorsFile golden = read_safetensors(fixtures_dir() + "/micro/golden.safetensors");
  SafetensorsFile ours = read_safetensors(s.file("l.safetensors"));
  for (const char* key : {"masks", "low_res_masks", "iou_predictions", "object_score_logits"}) {
    const Tensor& g = golden.tensors.at(std::string("p1_point.mm.") + key);
    const Tensor& o = ours.tensors.at(key);
    EXPECT_EQ(o.shape(), g.shape()) << key;
    if (o.shape() == g.shape()) {
      EXPECT_LE(compare_tensors(o, g).max_abs_err, 1e-4) << key;
    }
  }
  const RgbImage mask = decode_image_file(s.file("mask.png"));
  const RgbImage stacked = decode_image_file(fixtures_dir() + "/micro/masks/p1_point.mm.png");
  EXPECT_EQ(mask.width, 288);
  EXPECT_EQ(mask.height, 112);
  if (mask.width != 288 || mask.height != 112) return r;
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
  return r;
}

// `everything` with the parameters of the amg/ golden `name`, checked by the
// fixtures' check_amg.py (the matching rule of amg/README.md).
inline void check_amg_case(const std::string& name, const std::vector<std::string>& extra = {}) {
  const std::string golden_path = fixtures_dir() + "/amg/" + name + ".json";
  const nlohmann::json golden = nlohmann::json::parse(read_text(golden_path));
  ScratchDir scratch("amg_" + name);
  std::vector<std::string> args = {"everything", "--quiet", "--image",
                                   fixtures_dir() + "/images/" + golden["image"].get<std::string>(), "--json",
                                   scratch.file("candidate.json")};
  if (golden["model"]["config"] == "sam2.1_micro.yaml") {
    args.insert(args.end(), {"--config", fixtures_dir() + "/micro/sam2.1_micro.yaml", "--model",
                             fixtures_dir() + "/micro/micro.pt"});
  } else {
    ASSERT_EQ(golden["model"]["config"], "sam2.1_hiera_t.yaml");
    args.insert(args.end(), {"--variant", "tiny", "--synthetic-weights", "0"});
  }
  auto number = [](const nlohmann::json& v) -> std::string {
    if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
    if (v.is_number_integer()) return std::to_string(v.get<long long>());
    char text[64];
    std::snprintf(text, sizeof text, "%.17g", v.get<double>());
    return text;
  };
  for (const auto& [key, value] : golden["params"].items()) {
    std::string flag = "--" + key;
    for (char& c : flag) c = c == '_' ? '-' : c;
    args.push_back(flag);
    args.push_back(value.is_string() ? value.get<std::string>() : number(value));
  }
  args.insert(args.end(), extra.begin(), extra.end());
  const CliResult run = run_cli(args, scratch, 600);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string report = scratch.file("check.txt");
  const std::string command = "/usr/bin/python3 " + shell_quote(fixtures_dir() + "/amg/check_amg.py") + " " +
                              shell_quote(golden_path) + " " + shell_quote(scratch.file("candidate.json")) + " -v >" +
                              shell_quote(report) + " 2>&1";
  const int status = std::system(command.c_str());
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << read_text(report);
}

}  // namespace sam2rt::testing
