// Video tracking on the Vulkan backend (lavapipe in CI), validation layers
// on: the image encoder, the mask decoder and both memory modules on the
// device, replaying the micro cases of tests/video/goldens against the
// official SAM2VideoPredictor at the CPU's bar.
#ifdef SAM2RT_VULKAN

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "video_golden_replay.h"
#include "vulkan_test_context.h"

namespace sam2rt::testing {
namespace {

class VulkanVideoGolden : public VulkanBackendTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(VulkanVideoGolden, EveryCallMatchesTheOfficialPredictor) {
  VideoGoldenReplay replay(GetParam(), backend());
  replay.run();
  std::printf("vulkan %s: max abs logit error %.3g\n", GetParam().c_str(), replay.worst_logit_error());
}

// A click tracked forward, a mask prompt, two objects, reverse tracking, and
// an object hidden then back (the object-absent memory).
INSTANTIATE_TEST_SUITE_P(Micro, VulkanVideoGolden,
                         ::testing::Values("micro_point", "micro_mask", "micro_two_objects", "micro_reverse",
                                           "micro_occlusion"));

}  // namespace
}  // namespace sam2rt::testing

#endif  // SAM2RT_VULKAN
