// The video tracker's steps against the official SAM2Base's, on the harness's
// module goldens (tests/video/goldens/modules_micro.*, tests/video/README.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "io/checkpoint.h"
#include "io/safetensors.h"
#include "kernels/layout.h"
#include "model/config.h"
#include "model/sam_heads.h"
#include "model/tracking_config.h"
#include "model/video_tracker.h"
#include "test_paths.h"

namespace sam2rt {
namespace {

double max_abs_error(const Tensor& got, const Tensor& want) {
  EXPECT_EQ(got.numel(), want.numel());
  double worst = 0.0;
  for (int64_t i = 0; i < std::min(got.numel(), want.numel()); ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(got[i]) - want[i]));
  }
  return worst;
}

struct MicroTracker {
  ModelConfig config = load_config_yaml(testing::fixtures_dir() + "/micro/sam2.1_micro.yaml");
  WeightMap weights = load_checkpoint(testing::fixtures_dir() + "/micro/micro.pt");
  SamHeads heads{config, weights};
  VideoTracker tracker{config, tracking_config(config), weights, heads};
};

TEST(VideoTracker, MaskPromptIsTheOutputAndGivesTheOfficialPointer) {
  const MicroTracker micro;
  const SafetensorsFile golden = read_safetensors(std::string(SAM2RT_SOURCE_DIR) + "/tests/video/goldens/modules_micro.safetensors");
  const auto& g = golden.tensors;
  // The frame's features as the official _track_step reads them for a mask input.
  FrameFeatures frame;
  const Tensor& level2 = g.at("mao.features.level2");
  frame.vision_feats = nchw_to_hwc(level2).reshaped({level2.dim(2) * level2.dim(3), level2.dim(1)});
  frame.decoder.feat_s0 = g.at("mao.features.feat_s0");
  frame.decoder.feat_s1 = g.at("mao.features.feat_s1");
  for (const std::string tag : {"ellipse", "empty"}) {
    SCOPED_TRACE(tag);
    const std::string p = "mao." + tag + ".";
    const int64_t s = micro.config.image_size;
    FramePrompt prompt;
    prompt.mask = tag == "ellipse" ? g.at(p + "mask_inputs").reshaped({1, s, s}) : Tensor({1, s, s});
    const TrackStepOutput out = micro.tracker.track_step(frame, 0, true, prompt, ObjectOutputs{}, 8, false);
    EXPECT_EQ(max_abs_error(out.high_res_masks, g.at(p + "high_res_masks")), 0.0);
    EXPECT_LE(max_abs_error(out.low_res_masks, g.at(p + "low_res_masks")), 1e-5);
    EXPECT_LE(max_abs_error(out.obj_ptr, g.at(p + "obj_ptr")), 1e-4);
    EXPECT_EQ(out.object_score_logit, g.at(p + "object_score_logits")[0]);
  }
}

TEST(VideoTracker, MemoryOfAPromptedFrameIsBinarizedAndOfATrackedOneTheSigmoid) {
  const MicroTracker micro;
  const SafetensorsFile golden = read_safetensors(std::string(SAM2RT_SOURCE_DIR) + "/tests/video/goldens/modules_micro.safetensors");
  const auto& g = golden.tensors;
  const Tensor& level2 = g.at("me.pix_feat");
  FrameFeatures frame;
  frame.vision_feats = nchw_to_hwc(level2).reshaped({level2.dim(2) * level2.dim(3), level2.dim(1)});
  const int64_t s = micro.config.image_size;
  const Tensor high_res = g.at("enc.high_res_logits").reshaped({1, s, s});
  for (const auto& [tag, from_points, score] :
       {std::tuple{"pts_present", true, 1.0f}, std::tuple{"track_absent", false, -1.0f}}) {
    SCOPED_TRACE(tag);
    const Tensor got = micro.tracker.encode_memory(frame, high_res, score, from_points);
    const Tensor want_nchw = g.at(std::string("enc.") + tag + ".maskmem_features");
    const Tensor want = nchw_to_hwc(want_nchw).reshaped(got.shape());
    // The tracker stores bfloat16: within one bfloat16 step of the official float32 value.
    for (int64_t i = 0; i < got.numel(); ++i) {
      ASSERT_LE(std::abs(got[i] - want[i]), std::max(1e-4, std::abs(want[i]) / 128.0)) << "at " << i;
    }
  }
}

}  // namespace
}  // namespace sam2rt
