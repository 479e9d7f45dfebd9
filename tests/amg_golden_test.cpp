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

#include "cli_runner.h"

namespace sam2rt::testing {
namespace {

std::string number(const nlohmann::json& v) {
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_integer()) return std::to_string(v.get<long long>());
  char text[64];
  std::snprintf(text, sizeof text, "%.17g", v.get<double>());
  return text;
}

std::string flag(std::string name) {
  for (char& c : name) c = c == '_' ? '-' : c;
  return "--" + name;
}

void check_case(const std::string& name) {
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
  for (const auto& [key, value] : golden["params"].items()) {
    args.push_back(flag(key));
    args.push_back(value.is_string() ? value.get<std::string>() : number(value));
  }
  const CliResult run = run_cli(args, scratch, 600);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string report = scratch.file("check.txt");
  const std::string command = "/usr/bin/python3 " + shell_quote(fixtures_dir() + "/amg/check_amg.py") + " " +
                              shell_quote(golden_path) + " " + shell_quote(scratch.file("candidate.json")) + " -v >" +
                              shell_quote(report) + " 2>&1";
  const int status = std::system(command.c_str());
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << read_text(report);
}

TEST(AmgGoldenMicro, MultimaskGrid8) { check_case("micro_mm_g8"); }
TEST(AmgGoldenMicro, NmsAtMaskThreshold3) { check_case("micro_nms_mt3"); }
TEST(AmgGoldenMicro, CropsSingleMask) { check_case("micro_crops_sm"); }
TEST(AmgGoldenMicro, MaskToMaskWithHoleFilling) { check_case("micro_m2m_holes"); }
TEST(AmgGoldenTiny, Grid16) { check_case("tiny_g16"); }

}  // namespace
}  // namespace sam2rt::testing
