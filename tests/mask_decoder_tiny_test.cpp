// The decoder on the Tiny case (tiny_decoder_case.h: the goldens' image_embed,
// our encoder's high-resolution features) through SamHeads on the CPU.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "model/sam_heads.h"
#include "tiny_decoder_case.h"

namespace sam2rt {
namespace {

using testing::max_abs_error;

constexpr double kLogitTolerance = 1e-4;
constexpr double kScoreTolerance = 1e-5;

TEST(MaskDecoderTiny, AllRunsMatchGoldens) {
  const auto& c = testing::tiny_decoder_case();
  const SamHeads heads(c.config, c.weights);
  EXPECT_LE(max_abs_error(testing::decimate(heads.dense_pe(), 4), c.at("dense_pe.dec4")), kLogitTolerance);
  const int runs = testing::expect_golden_runs_match(
      c, heads, {kLogitTolerance, kScoreTolerance}, [&](const testing::GoldenRun& r, const MaskPrediction& pred) {
        testing::expect_tiny_run_matches(c, r, pred, kLogitTolerance);
      });
  EXPECT_EQ(runs, 10);
}

TEST(MaskDecoderTiny, BatchEqualsOneByOne) {
  const auto& c = testing::tiny_decoder_case();
  const SamHeads heads(c.config, c.weights);
  std::vector<Prompt> prompts;
  for (const auto& g : c.prompts) prompts.push_back(g.prompt);
  const auto start = std::chrono::steady_clock::now();
  const auto batch = heads.predict_batch(c.features, prompts, true, c.orig_w, c.orig_h);
  std::printf("  tiny predict_batch of %zu prompts: %.3f s\n", prompts.size(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  for (size_t i = 0; i < prompts.size(); ++i) {
    SCOPED_TRACE("prompt " + std::to_string(i));
    const MaskPrediction single = heads.predict(c.features, prompts[i], true, c.orig_w, c.orig_h);
    // Prompts decoded in lockstep or alone, on one thread or two: the same bits.
    ASSERT_EQ(batch[i].masks.numel(), single.masks.numel());
    EXPECT_EQ(std::memcmp(batch[i].masks.data(), single.masks.data(), sizeof(float) * single.masks.numel()), 0);
    EXPECT_EQ(batch[i].iou_predictions, single.iou_predictions);
  }
}

}  // namespace
}  // namespace sam2rt
