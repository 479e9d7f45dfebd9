// `--device` on the CLI: without a usable Vulkan device (or in a build without
// Vulkan) one line and a nonzero exit; with SAM2RT_VULKAN, `encode --device
// vulkan` matches `--device cpu` at the golden tolerances and `bench` reports
// every op on the device (lavapipe in CI).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "scoped_environment.h"
#include "test_paths.h"

namespace sam2rt::testing {
namespace {

std::vector<std::string> micro_encode(const std::string& device, const std::string& out) {
  const std::string fixtures = fixtures_dir();
  return {"encode", "--config", fixtures + "/micro/sam2.1_micro.yaml", "--synthetic-weights", "0", "--image",
          fixtures + "/images/chelsea_288x112.png", "--all-features", "--device", device, "--out", out};
}

TEST(CliDevice, WithoutVulkanSaysSoInOneLine) {
  const ScratchDir scratch("cli_no_vulkan");
  const ScopedEnvironment icd("VK_ICD_FILENAMES", "/nonexistent/sam2rt_no_driver.json");
  const ScopedEnvironment drivers("VK_DRIVER_FILES", "/nonexistent/sam2rt_no_driver.json");
  const std::string out = scratch.file("features.safetensors");
  const CliResult result = run_cli(micro_encode("vulkan", out), scratch, 120);
  EXPECT_NE(result.exit_code, 0);
  EXPECT_EQ(result.err.find("sam2rt: error: no Vulkan device: "), 0u) << result.err;
  EXPECT_TRUE(result.err.ends_with("; use --device cpu\n")) << result.err;
  EXPECT_FALSE(std::filesystem::exists(out));
}

#ifdef SAM2RT_VULKAN

TEST(CliVulkan, EncodeMatchesTheCpu) {
  const ScratchDir scratch("cli_vulkan_encode");
  const std::string cpu = scratch.file("cpu.safetensors"), vulkan = scratch.file("vulkan.safetensors");
  ASSERT_EQ(run_cli(micro_encode("cpu", cpu), scratch, 300).exit_code, 0);
  const CliResult encoded = run_cli(micro_encode("vulkan", vulkan), scratch, 300);
  ASSERT_EQ(encoded.exit_code, 0) << encoded.err;
  EXPECT_NE(encoded.err.find("device: vulkan: "), std::string::npos) << encoded.err;
  const CliResult compared =
      run_cli({"compare", vulkan, cpu, "--max-abs", "1e-4", "--one-minus-cos", "1e-9"}, scratch, 120);
  EXPECT_EQ(compared.exit_code, 0) << compared.out << compared.err;
  for (const char* key : {"image_embed", "feat_s1", "feat_s0", "neck.level0", "neck.level1", "neck.level2"}) {
    EXPECT_NE(compared.out.find(key), std::string::npos) << key << " not compared:\n" << compared.out;
  }
}

TEST(CliVulkan, BenchCountsEveryOpOnTheDevice) {
  const ScratchDir scratch("cli_vulkan_bench");
  const std::string json = scratch.file("bench.json");
  const CliResult result = run_cli({"bench", "--config", fixtures_dir() + "/micro/sam2.1_micro.yaml",
                                    "--synthetic-weights", "0", "--device", "vulkan", "--gpu-index", "0",
                                    "--encoder-only", "--warmup", "0", "--runs", "2", "--json", json},
                                   scratch, 300);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("encode on device"), std::string::npos) << result.out;
  const nlohmann::json report = nlohmann::json::parse(read_text(json));
  EXPECT_EQ(report.at("device").get<std::string>().rfind("vulkan: ", 0), 0u) << report.dump();
  EXPECT_GT(report.at("ops_total").get<int>(), 0);
  EXPECT_EQ(report.at("ops_on_device"), report.at("ops_total"));
  EXPECT_GE(report.at("device_dispatches").get<int>(), report.at("ops_total").get<int>());
  EXPECT_TRUE(report.contains("upload_ms") && report.contains("device_encode_ms") && report.contains("download_ms"));
}

#endif

}  // namespace
}  // namespace sam2rt::testing
