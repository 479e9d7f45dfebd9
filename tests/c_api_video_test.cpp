// The C API's video sessions (sam2rt_video_*) against the official
// SAM2VideoPredictor's micro goldens (tests/video/goldens, tests/video/README.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "api/sam2rt_c.h"
#include "io/safetensors.h"
#include "test_paths.h"

namespace {

using sam2rt::testing::fixtures_dir;

const std::string kSourceDir = SAM2RT_SOURCE_DIR;
const std::string kPanClip = kSourceDir + "/tests/video/clips/pan";

struct ModelDeleter {
  void operator()(sam2rt_model* model) const { sam2rt_model_free(model); }
};
struct VideoDeleter {
  void operator()(sam2rt_video* video) const { sam2rt_video_free(video); }
};
using ModelHandle = std::unique_ptr<sam2rt_model, ModelDeleter>;
using VideoHandle = std::unique_ptr<sam2rt_video, VideoDeleter>;

ModelHandle micro_model() {
  const std::string dir = fixtures_dir() + "/micro";
  return ModelHandle(sam2rt_model_load((dir + "/micro.pt").c_str(), nullptr, (dir + "/sam2.1_micro.yaml").c_str()));
}

// One frame's masks, owned.
struct FrameMasks {
  int64_t frame_idx = 0;
  std::vector<int64_t> obj_ids;
  int32_t width = 0, height = 0;
  std::vector<float> logits;
};

FrameMasks copy_of(const sam2rt_video_masks& masks) {
  FrameMasks copy{masks.frame_idx, {masks.obj_ids, masks.obj_ids + masks.num_objects}, masks.width, masks.height, {}};
  copy.logits.assign(masks.logits,
                     masks.logits + static_cast<size_t>(masks.num_objects) * masks.width * masks.height);
  return copy;
}

// Returned masks as FrameMasks, releasing the C struct.
FrameMasks take(sam2rt_video_masks& masks) {
  FrameMasks copy = copy_of(masks);
  sam2rt_video_masks_free(&masks);
  return copy;
}

int collect_frame(const sam2rt_video_masks* masks, void* user_data) {
  static_cast<std::vector<FrameMasks>*>(user_data)->push_back(copy_of(*masks));
  return 0;
}

int stop_after_first_frame(const sam2rt_video_masks* masks, void* user_data) {
  collect_frame(masks, user_data);
  return 1;
}

// Worst |got - want| over the golden's `{key}.video_res_masks.dec4` (= official[..., ::4, ::4]),
// where a float32 step of the official logit counts as no error: an absent object's
// logits are about -1024 (NO_OBJ_SCORE), where a float32 step is 1.2e-4.
double decimated_error(const FrameMasks& got, const sam2rt::SafetensorsFile& golden, const std::string& key) {
  const sam2rt::Tensor& want = golden.tensors.at(key + ".video_res_masks.dec4");
  constexpr int64_t kStep = 4;
  const int64_t h = got.height, w = got.width, dh = (h + kStep - 1) / kStep, dw = (w + kStep - 1) / kStep;
  EXPECT_EQ(want.numel(), static_cast<int64_t>(got.obj_ids.size()) * dh * dw) << key;
  double worst = 0.0;
  for (int64_t p = 0; p < static_cast<int64_t>(got.obj_ids.size()); ++p)
    for (int64_t y = 0; y < dh; ++y)
      for (int64_t x = 0; x < dw; ++x) {
        const double a = got.logits[static_cast<size_t>(p * h * w + y * kStep * w + x * kStep)];
        const double b = want[p * dh * dw + y * dw + x];
        const double float_step = std::ldexp(std::abs(b), -23);
        worst = std::max(worst, std::abs(a - b) <= float_step ? 0.0 : std::abs(a - b));
      }
  return worst;
}

TEST(CApiVideo, PointThenPropagationMatchesOfficialGolden) {
  const ModelHandle model = micro_model();
  ASSERT_TRUE(model) << sam2rt_last_error();
  const VideoHandle video(sam2rt_video_new(model.get(), kPanClip.c_str()));
  ASSERT_TRUE(video) << sam2rt_last_error();
  int64_t num_frames = 0;
  int32_t width = 0, height = 0;
  ASSERT_EQ(sam2rt_video_info(video.get(), &num_frames, &width, &height), 0) << sam2rt_last_error();
  EXPECT_EQ(num_frames, 8);
  EXPECT_EQ(width, 240);
  EXPECT_EQ(height, 160);
  const sam2rt::SafetensorsFile golden =
      sam2rt::read_safetensors(kSourceDir + "/tests/video/goldens/micro_point.safetensors");

  // micro_point.json: call 0 clicks (125, 85) on frame 0 for object 1, call 1 propagates.
  const float point[2] = {125.0f, 85.0f};
  const int32_t label = 1;
  sam2rt_video_masks returned{};
  ASSERT_EQ(sam2rt_video_add_points_or_box(video.get(), 0, 1, point, &label, 1, nullptr, 1, 1, &returned), 0)
      << sam2rt_last_error();
  const FrameMasks prompted = take(returned);
  EXPECT_EQ(prompted.frame_idx, 0);
  EXPECT_EQ(prompted.obj_ids, std::vector<int64_t>{1});
  EXPECT_LE(decimated_error(prompted, golden, "call0"), 1e-4);

  std::vector<FrameMasks> frames;
  ASSERT_EQ(sam2rt_video_propagate(video.get(), -1, -1, 0, collect_frame, &frames), 0) << sam2rt_last_error();
  ASSERT_EQ(frames.size(), 8u);
  for (size_t f = 0; f < frames.size(); ++f) {
    EXPECT_EQ(frames[f].frame_idx, static_cast<int64_t>(f));
    EXPECT_EQ(frames[f].obj_ids, std::vector<int64_t>{1});
    EXPECT_LE(decimated_error(frames[f], golden, "call1.f" + std::to_string(f)), 1e-4) << "frame " << f;
  }
}

TEST(CApiVideo, NonzeroFromTheCallbackStopsThePropagation) {
  const ModelHandle model = micro_model();
  const VideoHandle video(sam2rt_video_new(model.get(), kPanClip.c_str()));
  ASSERT_TRUE(video) << sam2rt_last_error();
  const float box[4] = {95.0f, 62.0f, 160.0f, 110.0f};
  sam2rt_video_masks returned{};
  ASSERT_EQ(sam2rt_video_add_points_or_box(video.get(), 2, 4, nullptr, nullptr, 0, box, 1, 1, &returned), 0)
      << sam2rt_last_error();
  sam2rt_video_masks_free(&returned);
  std::vector<FrameMasks> frames;
  ASSERT_EQ(sam2rt_video_propagate(video.get(), -1, -1, 0, stop_after_first_frame, &frames), 0)
      << sam2rt_last_error();
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].frame_idx, 2);
}

TEST(CApiVideo, MaskPromptsAndObjectBookkeeping) {
  const ModelHandle model = micro_model();
  const VideoHandle video(sam2rt_video_new(model.get(), kPanClip.c_str()));
  ASSERT_TRUE(video) << sam2rt_last_error();
  std::vector<uint8_t> mask(240 * 160, 0);
  for (int y = 60; y < 110; ++y) std::fill_n(mask.begin() + y * 240 + 95, 65, uint8_t{1});
  sam2rt_video_masks returned{};
  ASSERT_EQ(sam2rt_video_add_mask(video.get(), 0, 3, mask.data(), 240, 160, &returned), 0) << sam2rt_last_error();
  EXPECT_EQ(take(returned).logits.size(), 240u * 160u);
  const float point[2] = {20.0f, 20.0f};
  const int32_t label = 1;
  ASSERT_EQ(sam2rt_video_add_points_or_box(video.get(), 0, 9, point, &label, 1, nullptr, 1, 1, &returned), 0);
  const FrameMasks both = take(returned);
  EXPECT_EQ(both.obj_ids, (std::vector<int64_t>{3, 9}));
  EXPECT_EQ(both.logits.size(), 2u * 240u * 160u);

  int64_t ids[4] = {};
  int32_t count = 0;
  ASSERT_EQ(sam2rt_video_obj_ids(video.get(), ids, 1, &count), 0);
  EXPECT_EQ(count, 2);
  EXPECT_EQ(ids[0], 3);
  ASSERT_EQ(sam2rt_video_clear_prompts_in_frame(video.get(), 0, 9, nullptr), 0) << sam2rt_last_error();
  ASSERT_EQ(sam2rt_video_remove_object(video.get(), 3, 1), 0) << sam2rt_last_error();
  ASSERT_EQ(sam2rt_video_obj_ids(video.get(), ids, 4, &count), 0);
  ASSERT_EQ(count, 1);
  EXPECT_EQ(ids[0], 9);
  EXPECT_NE(sam2rt_video_remove_object(video.get(), 42, 1), 0);
  EXPECT_NE(std::string(sam2rt_last_error()), "");
  EXPECT_EQ(sam2rt_video_remove_object(video.get(), 42, 0), 0) << sam2rt_last_error();
  ASSERT_EQ(sam2rt_video_reset(video.get()), 0);
  ASSERT_EQ(sam2rt_video_obj_ids(video.get(), nullptr, 0, &count), 0);
  EXPECT_EQ(count, 0);
}

TEST(CApiVideo, ErrorsAreStatusCodesWithAMessage) {
  const ModelHandle model = micro_model();
  EXPECT_EQ(sam2rt_video_new(nullptr, kPanClip.c_str()), nullptr);
  EXPECT_NE(std::string(sam2rt_last_error()).find("NULL"), std::string::npos);
  EXPECT_EQ(sam2rt_video_new(model.get(), (kPanClip + "/missing.mp4").c_str()), nullptr);
  EXPECT_NE(std::string(sam2rt_last_error()), "");

  const VideoHandle video(sam2rt_video_new(model.get(), kPanClip.c_str()));
  ASSERT_TRUE(video) << sam2rt_last_error();
  std::vector<FrameMasks> frames;
  EXPECT_NE(sam2rt_video_propagate(video.get(), -1, -1, 0, collect_frame, &frames), 0);
  EXPECT_NE(std::string(sam2rt_last_error()).find("No input points or masks"), std::string::npos);

  const float point[2] = {125.0f, 85.0f};
  const int32_t label = 1;
  sam2rt_video_masks out{};
  EXPECT_NE(sam2rt_video_add_points_or_box(video.get(), 8, 1, point, &label, 1, nullptr, 1, 1, &out), 0);
  EXPECT_NE(std::string(sam2rt_last_error()).find("frame index 8"), std::string::npos);
  const float box[4] = {95.0f, 62.0f, 160.0f, 110.0f};
  EXPECT_NE(sam2rt_video_add_points_or_box(video.get(), 0, 1, nullptr, nullptr, 0, box, 0, 1, &out), 0);
  EXPECT_NE(std::string(sam2rt_last_error()).find("clearing old points"), std::string::npos);
  EXPECT_NE(sam2rt_video_add_points_or_box(video.get(), 0, 1, nullptr, &label, 1, nullptr, 1, 1, &out), 0);
  EXPECT_NE(sam2rt_video_add_points_or_box(nullptr, 0, 1, point, &label, 1, nullptr, 1, 1, &out), 0);
  const uint8_t pixel = 1;
  EXPECT_NE(sam2rt_video_add_mask(video.get(), 0, 1, &pixel, 0, 1, &out), 0);
  EXPECT_NE(sam2rt_video_add_mask(video.get(), 0, 1, nullptr, 1, 1, &out), 0);
  EXPECT_NE(sam2rt_video_propagate(video.get(), -1, -1, 0, nullptr, nullptr), 0);
  EXPECT_NE(sam2rt_video_info(nullptr, nullptr, nullptr, nullptr), 0);
  int32_t count = 0;
  EXPECT_NE(sam2rt_video_obj_ids(video.get(), nullptr, 2, &count), 0);
  sam2rt_video_masks_free(nullptr);
}

}  // namespace
