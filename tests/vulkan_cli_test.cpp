// `--device` on the CLI: without a usable Vulkan device (or in a build without
// Vulkan) one line and a nonzero exit from every command that takes it; with
// SAM2RT_VULKAN, `encode --device vulkan` matches `--device cpu` at the golden
// tolerances, `segment`, `everything` and `track` meet the micro goldens under
// their own rules, `serve` answers as the CPU server does, and `bench` reports every op on
// the device (lavapipe in CI).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "cli_goldens.h"
#include "cli_runner.h"
#include "cli_track_goldens.h"
#include "scoped_environment.h"
#include "server_process.h"
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
  const std::string config = fixtures_dir() + "/micro/sam2.1_micro.yaml";
  const std::string image = fixtures_dir() + "/images/chelsea_288x112.png";
  const std::vector<std::vector<std::string>> runs = {
      micro_encode("vulkan", out),
      {"segment", "--config", config, "--synthetic-weights", "0", "--image", image, "--point", "10,10", "--out",
       scratch.file("mask.png"), "--device", "vulkan"},
      {"everything", "--config", config, "--synthetic-weights", "0", "--image", image, "--json",
       scratch.file("masks.json"), "--device", "vulkan", "--gpu-index", "0"},
      {"serve", "--config", config, "--synthetic-weights", "0", "--port", "0", "--device", "vulkan"},
      {"track", "--config", config, "--synthetic-weights", "0", "--video", pan_clip(), "--point", "0:10,10",
       "--out-dir", scratch.file("masks"), "--device", "vulkan"}};
  for (const auto& run : runs) {
    SCOPED_TRACE(run.front());
    const CliResult result = run_cli(run, scratch, 120);
    EXPECT_NE(result.exit_code, 0);
    EXPECT_EQ(result.err.find("sam2rt: error: no Vulkan device: "), 0u) << result.err;
    EXPECT_TRUE(result.err.ends_with("; use --device cpu\n")) << result.err;
  }
  for (const char* name : {"features.safetensors", "mask.png", "masks.json", "masks"}) {
    EXPECT_FALSE(std::filesystem::exists(scratch.file(name))) << name;
  }
}

TEST(CliDevice, Bf16IsRefusedOnVulkanBeforeLoading) {
  const ScratchDir scratch("cli_bf16_vulkan");
  const CliResult result = run_cli({"segment", "--config", fixtures_dir() + "/micro/sam2.1_micro.yaml",
                                    "--synthetic-weights", "0", "--image", fixtures_dir() + "/images/chelsea_288x112.png",
                                    "--point", "10,10", "--out", scratch.file("mask.png"), "--device", "vulkan",
                                    "--precision", "bf16"},
                                   scratch, 120);
  EXPECT_NE(result.exit_code, 0);
  EXPECT_EQ(result.err, "sam2rt: error: --precision bf16 runs on --device cpu only; use --precision fp32 with "
                        "--device vulkan\n");
}

TEST(CliDevice, Fp16IsRefusedOnTheCpu) {
  const ScratchDir scratch("cli_fp16_cpu");
  std::vector<std::string> args = micro_encode("cpu", scratch.file("features.safetensors"));
  args.insert(args.end(), {"--precision", "fp16"});
  const CliResult result = run_cli(args, scratch, 120);
  EXPECT_NE(result.exit_code, 0);
  EXPECT_EQ(result.err, "sam2rt: error: --precision fp16 runs on --device vulkan only; on the CPU use fp32 (or bf16)\n");
  EXPECT_FALSE(std::filesystem::exists(scratch.file("features.safetensors")));
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

// --precision fp16: every level within the fp16 acceptance bound (cosine >= 0.9999)
// of the CPU's fp32, and the file says how it was made.
TEST(CliVulkan, EncodeInFp16StaysAboveTheCosineBound) {
  const ScratchDir scratch("cli_vulkan_fp16");
  const std::string cpu = scratch.file("cpu.safetensors"), fp16 = scratch.file("fp16.safetensors");
  ASSERT_EQ(run_cli(micro_encode("cpu", cpu), scratch, 300).exit_code, 0);
  std::vector<std::string> args = micro_encode("vulkan", fp16);
  args.insert(args.end(), {"--precision", "fp16"});
  const CliResult encoded = run_cli(args, scratch, 300);
  ASSERT_EQ(encoded.exit_code, 0) << encoded.err;
  const CliResult compared = run_cli({"compare", fp16, cpu, "--one-minus-cos", "1e-4"}, scratch, 120);
  EXPECT_EQ(compared.exit_code, 0) << compared.out << compared.err;
  EXPECT_NE(compared.out.find("image_embed"), std::string::npos) << compared.out;
  const CliResult exact = run_cli({"compare", fp16, cpu, "--one-minus-cos", "1e-9"}, scratch, 120);
  EXPECT_NE(exact.exit_code, 0) << "fp16 within the fp32 tolerance:\n" << exact.out;
  EXPECT_NE(read_text(fp16).find("\"precision\":\"fp16\""), std::string::npos);
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
  // The image goes up once; nothing comes down (the decoder's features stay there).
  EXPECT_EQ(report.at("uploads_per_image"), 1) << report.dump();
  EXPECT_EQ(report.at("downloads_per_image"), 0) << report.dump();
  EXPECT_FALSE(report.contains("decoder_downloads_per_prompt"));
  // No pinning off the CPU device: a driver computing on the CPU (lavapipe)
  // starts its workers from the main thread, which would hand them its one CPU.
  EXPECT_FALSE(report.at("threads_pinned").get<bool>());
}

TEST(CliVulkan, BenchCountsTheDecoderOpsOnTheDevice) {
  const ScratchDir scratch("cli_vulkan_bench_decoder");
  const std::string json = scratch.file("bench.json");
  const CliResult result = run_cli({"bench", "--config", fixtures_dir() + "/micro/sam2.1_micro.yaml",
                                    "--synthetic-weights", "0", "--device", "vulkan", "--warmup", "0", "--runs", "1",
                                    "--batch", "2", "--json", json},
                                   scratch, 300);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("decoder ops"), std::string::npos) << result.out;
  const nlohmann::json report = nlohmann::json::parse(read_text(json));
  EXPECT_GT(report.at("decoder_ops_total").get<int>(), 0) << report.dump();
  EXPECT_EQ(report.at("decoder_ops_on_device"), report.at("decoder_ops_total"));
  EXPECT_GE(report.at("decoder_device_dispatches").get<int>(), report.at("decoder_ops_total").get<int>());
  // A prompt uploads its tokens and downloads its outputs, packed into one tensor.
  EXPECT_NE(result.out.find("transfers       per image (set_image) 1 upload(s), 0 download(s); per prompt 1 "
                            "upload(s), 1 download(s)"),
            std::string::npos)
      << result.out;
  EXPECT_EQ(report.at("uploads_per_image"), 1) << report.dump();
  EXPECT_EQ(report.at("downloads_per_image"), 0) << report.dump();
  EXPECT_EQ(report.at("decoder_uploads_per_prompt"), 1) << report.dump();
  EXPECT_EQ(report.at("decoder_downloads_per_prompt"), 1) << report.dump();
  // The batch of 2 grid points (one token count) is one program run.
  EXPECT_NE(result.out.find("per batch of 2 prompts 1 submission(s), 1 upload(s), 1 download(s) (at most 64 prompts "
                            "per submission; the last program "),
            std::string::npos)
      << result.out;
  // The one-prompt program's count: every op of the batch, the hypernetwork products included, is one dispatch.
  EXPECT_EQ(report.at("decoder_batch_program_dispatches"), report.at("decoder_device_dispatches")) << report.dump();
  EXPECT_EQ(report.at("decoder_batch_prompts"), 2) << report.dump();
  EXPECT_EQ(report.at("decoder_batch_submissions"), 1) << report.dump();
  EXPECT_EQ(report.at("decoder_batch_uploads"), 1) << report.dump();
  EXPECT_EQ(report.at("decoder_batch_downloads"), 1) << report.dump();
  EXPECT_EQ(report.at("decoder_max_prompts_per_submission"), 64) << report.dump();
}

TEST(CliVulkan, SegmentMeetsTheMicroGolden) {
  const ScratchDir scratch("cli_vulkan_segment");
  const CliResult result = expect_micro_click_golden(scratch, {"--device", "vulkan", "--gpu-index", "0"});
  EXPECT_NE(result.err.find("device: vulkan: "), std::string::npos) << result.err;
}

TEST(CliVulkan, EverythingMeetsTheMicroGolden) { check_amg_case("micro_mm_g8", {"--device", "vulkan"}); }

// --use-m2m: each candidate refined with its own logits as mask input, decoded on the device too.
TEST(CliVulkan, EverythingWithMaskToMaskMeetsTheMicroGolden) {
  check_amg_case("micro_m2m_holes", {"--device", "vulkan"});
}

// Tracking with the encoder, the decoder and both memory modules on the
// device: two objects, every frame's masks as the official predictor's.
TEST(CliVulkan, TrackMeetsTheMicroGoldens) {
  ScratchDir s("track_vulkan");
  const CliResult r = run_cli(micro_track(s, pan_clip(),
                                          {"--point", "0:125,85", "--obj", "7", "--box", "0:205,70,240,120", "--device",
                                           "vulkan"}),
                              s, 600);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(files_in(s.file("masks")).size(), static_cast<size_t>(2 * kFrames));
  expect_masks_match_golden(s, "micro_two_objects.safetensors", 2, {1, 7});
}

TEST(CliVulkan, ServeAnswersAsTheCpuServerDoes) {
  ServerProcess cpu, vulkan({"--device", "vulkan"});
  ASSERT_GT(cpu.port(), 0) << cpu.url();
  ASSERT_GT(vulkan.port(), 0) << vulkan.url();
  std::vector<nlohmann::json> answers;
  for (ServerProcess* server : {&cpu, &vulkan}) {
    httplib::Client client = server->client();
    const auto health = client.Get("/healthz");
    ASSERT_TRUE(health);
    answers.push_back(nlohmann::json::parse(health->body));
    const auto upload = client.Post("/v1/images", read_text(fixtures_dir() + "/images/chelsea_288x112.png"),
                                    "image/png");
    ASSERT_TRUE(upload);
    ASSERT_EQ(upload->status, 201) << upload->body;
    const std::string id = nlohmann::json::parse(upload->body)["id"];
    const auto segmented = client.Post("/v1/images/" + id + "/segment",
                                       R"({"points": [[110, 41, 1]], "multimask": true})", "application/json");
    ASSERT_TRUE(segmented);
    ASSERT_EQ(segmented->status, 200) << segmented->body;
    answers.push_back(nlohmann::json::parse(segmented->body));
  }
  EXPECT_EQ(answers[0]["device"], "cpu");
  EXPECT_EQ(answers[2]["device"].get<std::string>().rfind("vulkan: ", 0), 0u) << answers[2].dump();
  const nlohmann::json &on_cpu = answers[1], &on_vulkan = answers[3];
  EXPECT_NEAR(on_vulkan["object_score_logit"].get<double>(), on_cpu["object_score_logit"].get<double>(), 1e-4);
  ASSERT_EQ(on_vulkan["masks"].size(), on_cpu["masks"].size());
  for (size_t i = 0; i < on_cpu["masks"].size(); ++i) {
    EXPECT_NEAR(on_vulkan["masks"][i]["iou"].get<double>(), on_cpu["masks"][i]["iou"].get<double>(), 1e-4) << i;
  }
  EXPECT_EQ(cpu.stop(), 0);
  EXPECT_EQ(vulkan.stop(), 0);
}

#endif

}  // namespace
}  // namespace sam2rt::testing
