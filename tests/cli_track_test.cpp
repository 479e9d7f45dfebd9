// `sam2rt track` end to end on the micro checkpoint and the 8-frame pan clip:
// its mask PNGs against the official SAM2VideoPredictor goldens
// (tests/video/README.md), its JSON against its PNGs, its overlay video, and
// the failures that must leave no file behind.

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "cli_track_goldens.h"
#include "io/image.h"
#include "io/mask_rle.h"
#include "io/png_writer.h"
#include "io/safetensors.h"
#include "io/video_frames.h"
#include "test_video_writer.h"

namespace sam2rt::testing {
namespace {

namespace fs = std::filesystem;

TEST(CliTrack, PointMatchesTheOfficialPredictor) {
  ScratchDir s("track_point");
  const CliResult r = run_cli(micro_track(s, pan_clip(), {"--point", "0:125,85", "--json", s.file("r.json")}), s, 600);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("track:"), std::string::npos) << "--quiet prints no progress: " << r.err;
  std::vector<std::string> expected;
  for (int f = 0; f < kFrames; ++f) expected.push_back(mask_name(f, 1));
  EXPECT_EQ(files_in(s.file("masks")), expected);
  expect_masks_match_golden(s, "micro_point.safetensors", 1, {1});

  // The JSON's RLE of every frame decodes to its PNG, with the PNG's area.
  const nlohmann::json report = nlohmann::json::parse(read_text(s.file("r.json")));
  EXPECT_EQ(report["width"], kWidth);
  EXPECT_EQ(report["height"], kHeight);
  EXPECT_EQ(report["prompts"][0]["points"][0], nlohmann::json({125.0, 85.0, 1}));
  ASSERT_EQ(report["frames"].size(), static_cast<size_t>(kFrames));
  for (int f = 0; f < kFrames; ++f) {
    const nlohmann::json& entry = report["frames"][static_cast<size_t>(f)];
    EXPECT_EQ(entry["frame"], f);
    ASSERT_EQ(entry["objects"].size(), 1u);
    const nlohmann::json& object = entry["objects"][0];
    EXPECT_EQ(object["obj_id"], 1);
    EXPECT_TRUE(object["object_score_logit"].is_number());
    const std::vector<uint8_t> decoded = decode_rle(coco_rle_from_string(
        object["segmentation"]["counts"].get<std::string>(), object["segmentation"]["size"][0].get<int64_t>(),
        object["segmentation"]["size"][1].get<int64_t>()));
    const RgbImage png = decode_image_file(s.file("masks/" + mask_name(f, 1)));
    ASSERT_EQ(decoded.size(), static_cast<size_t>(kWidth * kHeight));
    int64_t area = 0, differing = 0;
    for (size_t i = 0; i < decoded.size(); ++i) {
      area += decoded[i] != 0;
      differing += (decoded[i] != 0) != (png.pixels[3 * i] != 0);
    }
    EXPECT_EQ(differing, 0) << "frame " << f;
    EXPECT_EQ(object["area"], area);
  }
}

// The micro model's masks on pan are nearly empty; on the leave clip they cover
// thousands of pixels, and the object leaves the frame.
TEST(CliTrack, LeavingObjectMatchesTheOfficialPredictor) {
  ScratchDir s("track_leave");
  const CliResult r =
      run_cli(micro_track(s, source_dir() + "/tests/video/clips/leave", {"--point", "0:49,41"}), s, 600);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_masks_match_golden(s, "micro_leave.safetensors", 1, {1}, 256, 144);
}

TEST(CliTrack, TwoObjectsMatchTheOfficialPredictor) {
  ScratchDir s("track_two");
  // micro_two_objects.json gives object 7's box normalised: [205/240, 70/160, 240/240, 120/160].
  const CliResult r = run_cli(
      micro_track(s, pan_clip(), {"--point", "0:125,85", "--obj", "7", "--box", "0:205,70,240,120"}), s, 600);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(files_in(s.file("masks")).size(), static_cast<size_t>(2 * kFrames));
  expect_masks_match_golden(s, "micro_two_objects.safetensors", 2, {1, 7});
}

TEST(CliTrack, MaskPromptMatchesTheOfficialPredictor) {
  ScratchDir s("track_mask");
  const CliResult r =
      run_cli(micro_track(s, pan_clip(), {"--mask", "0:" + golden_path("micro_mask.call0.mask.png")}), s, 600);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_masks_match_golden(s, "micro_mask.safetensors", 1, {1});
}

TEST(CliTrack, ReverseTracksBackFromTheLatestPrompt) {
  ScratchDir s("track_reverse");
  // micro_reverse: a click on frame 7 tracked backward; the forward pass tracks frame 7 alone.
  const CliResult r = run_cli(micro_track(s, pan_clip(), {"--point", "7:41,71", "--reverse"}), s, 600);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_masks_match_golden(s, "micro_reverse.safetensors", 1, {1});
}

TEST(CliTrack, OverlayVideoHasEveryFrame) {
  ScratchDir s("track_overlay");
  const CliResult r = run_cli(
      micro_track(s, pan_clip(), {"--point", "0:125,85", "--overlay-video", s.file("overlay.mp4")}), s, 600);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto video = open_video_frames(s.file("overlay.mp4"));
  EXPECT_EQ(video->width(), kWidth);
  EXPECT_EQ(video->height(), kHeight);
  int frames = 0;
  while (video->next()) ++frames;
  EXPECT_EQ(frames, kFrames);
}

TEST(CliTrack, StreamReadsFramesOnceInOrder) {
  ScratchDir s("track_stream");
  const CliResult r = run_cli(micro_track(s, pan_clip(), {"--point", "0:125,85", "--stream"}), s, 600);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(files_in(s.file("masks")).size(), static_cast<size_t>(kFrames));
  const CliResult late = run_cli(micro_track(s, pan_clip(), {"--point", "3:125,85", "--stream"}), s, 600);
  EXPECT_NE(late.exit_code, 0);
  EXPECT_NE(late.err.find("frame 0 only"), std::string::npos) << late.err;
}

// Standard input, whose length is unknown: tracked with --stream, refused without it.
TEST(CliTrack, StreamTracksStandardInput) {
  ScratchDir s("track_stdin");
  std::vector<RgbImage> frames;
  for (int f = 0; f < kFrames; ++f) {
    char name[16];
    std::snprintf(name, sizeof(name), "/%05d.jpg", f);
    frames.push_back(decode_image_file(pan_clip() + name));
  }
  write_test_video(s.file("clip.nut"), frames, kLosslessFfv1);
  auto piped = [&](const std::string& extra) {
    std::string command = "cat " + shell_quote(s.file("clip.nut")) + " | " + shell_quote(cli_path());
    for (const std::string& arg : micro_track(s, "-", {"--point", "0:125,85"})) command += " " + shell_quote(arg);
    command += extra + " 2>" + shell_quote(s.file("err.txt"));
    const int status = std::system(command.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  EXPECT_NE(piped(""), 0);
  EXPECT_NE(read_text(s.file("err.txt")).find("add --stream"), std::string::npos) << read_text(s.file("err.txt"));
  EXPECT_FALSE(fs::exists(s.file("masks")));
  ASSERT_EQ(piped(" --stream"), 0) << read_text(s.file("err.txt"));
  EXPECT_EQ(files_in(s.file("masks")).size(), static_cast<size_t>(kFrames));
}

void expect_failure_leaves_nothing(const ScratchDir& s, const std::vector<std::string>& args,
                                   const std::string& message) {
  const CliResult r = run_cli(args, s, 600);
  EXPECT_NE(r.exit_code, 0) << message;
  // One error line, the last (the model's "loaded ..." line may come before it).
  const size_t error_line = r.err.find("sam2rt: error: ");
  ASSERT_NE(error_line, std::string::npos) << r.err;
  EXPECT_TRUE(error_line == 0 || r.err[error_line - 1] == '\n') << r.err;
  EXPECT_EQ(r.err.find('\n', error_line), r.err.size() - 1) << r.err;
  EXPECT_NE(r.err.find(message, error_line), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(s.file("masks"))) << message << ": " << ::testing::PrintToString(files_in(s.file("masks")));
  EXPECT_FALSE(fs::exists(s.file("r.json"))) << message;
  EXPECT_FALSE(fs::exists(s.file("o.mp4"))) << message;
}

TEST(CliTrack, FailuresLeaveNoFiles) {
  ScratchDir s("track_errors");
  const std::vector<std::string> outputs = {"--json", s.file("r.json"), "--overlay-video", s.file("o.mp4")};
  auto with_outputs = [&](std::vector<std::string> prompts) {
    prompts.insert(prompts.end(), outputs.begin(), outputs.end());
    return micro_track(s, pan_clip(), prompts);
  };
  expect_failure_leaves_nothing(s, with_outputs({"--point", "9:125,85"}), "frame 9 is outside the video's 8 frames");
  expect_failure_leaves_nothing(s, with_outputs({"--point", "125,85"}), "expected FRAME:X,Y[,LABEL]");
  expect_failure_leaves_nothing(s, with_outputs({"--point", "0:125,85", "--obj", "3"}), "--obj 3 has no");
  expect_failure_leaves_nothing(s, with_outputs({"--point", "0:125,85", "--bogus"}), "--bogus");
  {
    std::ofstream(s.file("not_a.png")) << "not a PNG";
    expect_failure_leaves_nothing(s, with_outputs({"--mask", "0:" + s.file("not_a.png")}), "not_a.png");
  }
  // A frame that cannot be decoded halfway through: masks of the frames before it were written, then removed.
  fs::create_directories(s.file("broken"));
  for (const auto& entry : fs::directory_iterator(pan_clip())) fs::copy(entry.path(), s.file("broken"));
  std::ofstream(s.file("broken/00005.jpg"), std::ios::binary | std::ios::trunc) << "\xff\xd8\xff truncated";
  std::vector<std::string> broken = micro_track(s, s.file("broken"), {"--point", "0:125,85"});
  broken.insert(broken.end(), outputs.begin(), outputs.end());
  expect_failure_leaves_nothing(s, broken, "00005.jpg");

  // A folder that exists keeps what it held, and gets nothing of a failed run.
  fs::create_directories(s.file("masks"));
  std::ofstream(s.file("masks/keep.txt")) << "earlier";
  const CliResult r = run_cli(broken, s, 600);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(files_in(s.file("masks")), std::vector<std::string>{"keep.txt"});
}

TEST(CliTrack, MaskOfAnotherSizeIsResized) {
  ScratchDir s("track_mask_size");
  std::vector<uint8_t> small(60 * 40, 0);
  for (int y = 15; y < 28; ++y) {
    for (int x = 22; x < 40; ++x) small[static_cast<size_t>(y * 60 + x)] = 255;
  }
  write_png_gray8(s.file("small.png"), small.data(), 60, 40);
  const CliResult r = run_cli(micro_track(s, pan_clip(), {"--mask", "0:" + s.file("small.png")}), s, 600);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(files_in(s.file("masks")).size(), static_cast<size_t>(kFrames));
}

TEST(CliTrack, HelpExplainsThePromptSyntax) {
  ScratchDir s("track_help");
  const CliResult r = run_cli({"track", "--help"}, s);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--point F:X,Y[,LABEL]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--obj 7 --box 10:205,70,240,120"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace sam2rt::testing
