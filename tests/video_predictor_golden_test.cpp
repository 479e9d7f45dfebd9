// VideoPredictor on the CPU against the official SAM2VideoPredictor: every
// case of tests/video/goldens replayed (video_golden_replay.h).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "video_golden_replay.h"

namespace sam2rt {
namespace {

using testing::VideoGoldenReplay;

class VideoPredictorGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(VideoPredictorGolden, EveryCallMatchesTheOfficialPredictor) {
  VideoGoldenReplay replay(GetParam());
  replay.run();
  std::printf("%s: max abs logit error %.3g\n", GetParam().c_str(), replay.worst_logit_error());
}

// Tiny at 1024: the occlusion clip (the object hidden, then back), a click
// tracked until all 7 memory slots are full, two objects (a click and a box).
INSTANTIATE_TEST_SUITE_P(Tiny, VideoPredictorGolden,
                         ::testing::Values("tiny_occlusion", "tiny_point", "tiny_two_objects"));

INSTANTIATE_TEST_SUITE_P(Micro, VideoPredictorGolden,
                         ::testing::Values("micro_point", "micro_box", "micro_mask", "micro_two_objects",
                                           "micro_correction", "micro_second_cond", "micro_reverse",
                                           "micro_occlusion", "micro_leave"));

}  // namespace
}  // namespace sam2rt
