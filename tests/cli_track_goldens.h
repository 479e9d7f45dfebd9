#pragma once

// `sam2rt track` runs on the micro checkpoint and the 8-frame pan clip, and
// their mask PNGs checked against the official SAM2VideoPredictor goldens
// (tests/video/README.md): shared by the CPU and the Vulkan tests.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "io/image.h"
#include "io/safetensors.h"
#include "test_paths.h"

namespace sam2rt::testing {

inline constexpr int kFrames = 8;
inline constexpr int kWidth = 240, kHeight = 160;  // the pan clip's
inline constexpr int kGoldenStep = 4;  // the goldens keep video_res_masks[..., ::4, ::4]
inline constexpr float kThresholdTolerance = 1e-4f;

inline std::string source_dir() { return SAM2RT_SOURCE_DIR; }
inline std::string pan_clip() { return source_dir() + "/tests/video/clips/pan"; }
inline std::string golden_path(const std::string& name) { return source_dir() + "/tests/video/goldens/" + name; }

inline std::vector<std::string> micro_track(const ScratchDir& s, const std::string& video, std::vector<std::string> extra) {
  std::vector<std::string> args = {"track",   "--model",   fixtures_dir() + "/micro/micro.pt",
                                   "--config", fixtures_dir() + "/micro/sam2.1_micro.yaml",
                                   "--video", video,       "--out-dir",
                                   s.file("masks"), "--quiet"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

inline std::string mask_name(int frame, int obj_id) {
  char name[32];
  std::snprintf(name, sizeof(name), "%05d_obj%d.png", frame, obj_id);
  return name;
}

inline std::vector<std::string> files_in(const std::filesystem::path& folder) {
  std::vector<std::string> names;
  if (!std::filesystem::exists(folder)) return names;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// Every object's PNG on every frame equals (logit > 0) of the golden propagation
// `call`, at the golden's pixels, except where the logit is within 1e-4 of 0.
inline void expect_masks_match_golden(const ScratchDir& s, const std::string& golden, int call,
                               const std::vector<int>& obj_ids, int width = kWidth, int height = kHeight) {
  const SafetensorsFile goldens = read_safetensors(golden_path(golden));
  for (int f = 0; f < kFrames; ++f) {
    const Tensor& logits = goldens.tensors.at("call" + std::to_string(call) + ".f" + std::to_string(f) +
                                              ".video_res_masks.dec" + std::to_string(kGoldenStep));
    ASSERT_EQ(logits.dim(0), static_cast<int64_t>(obj_ids.size()));
    const int64_t rows = logits.dim(2), columns = logits.dim(3);
    for (size_t o = 0; o < obj_ids.size(); ++o) {
      const RgbImage mask = decode_image_file(s.file("masks/" + mask_name(f, obj_ids[o])));
      ASSERT_EQ(mask.width, width);
      ASSERT_EQ(mask.height, height);
      int64_t differing = 0, checked = 0;
      for (int64_t y = 0; y < rows; ++y) {
        for (int64_t x = 0; x < columns; ++x) {
          const float logit = logits.data()[(static_cast<int64_t>(o) * rows + y) * columns + x];
          const uint8_t pixel =
              mask.pixels[static_cast<size_t>(((y * kGoldenStep) * width + x * kGoldenStep) * 3)];
          EXPECT_TRUE(pixel == 0 || pixel == 255);
          if (std::fabs(logit) < kThresholdTolerance) continue;
          ++checked;
          differing += (pixel == 255) != (logit > 0);
        }
      }
      EXPECT_EQ(differing, 0) << golden << " frame " << f << " object " << obj_ids[o];
      EXPECT_GT(checked, rows * columns / 2);
    }
  }
}

}  // namespace sam2rt::testing
