// The decoder on the Tiny case. Its goldens store image_embed in full but the
// high-resolution features only decimated, so feat_s1/feat_s0 come from our image
// encoder (itself checked against the decimated goldens here first). The input
// tensor is rebuilt from images/astronaut_1024.png, the bit-exact PIL resize.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "decoder_goldens.h"
#include "feature_compare.h"
#include "model/image_encoder.h"
#include "model/sam_heads.h"

namespace sam2rt {
namespace {

using testing::max_abs_error;
using testing::vector_tensor;

constexpr double kLogitTolerance = 1e-4;
constexpr double kScoreTolerance = 1e-5;

// torchvision ToTensor + Normalize in float32 on an S x S RGB image.
Tensor normalized_input(const testing::PngImage& png) {
  const float mean[3] = {0.485f, 0.456f, 0.406f};
  const float stdev[3] = {0.229f, 0.224f, 0.225f};
  const int64_t h = png.height, w = png.width;
  Tensor input({1, 3, h, w});
  for (int64_t c = 0; c < 3; ++c)
    for (int64_t p = 0; p < h * w; ++p) {
      const float x = static_cast<float>(png.pixels[static_cast<size_t>(p * 3 + c)]) / 255.0f;
      input[c * h * w + p] = (x - mean[c]) / stdev[c];
    }
  return input;
}

const testing::DecoderCase& tiny_decoder_case() {
  static const testing::DecoderCase c = [] {
    testing::DecoderCase m = testing::load_decoder_case(testing::tiny_dir(), preset_config("tiny"));
    const Tensor input = normalized_input(testing::read_png(testing::fixtures_dir() + "/images/astronaut_1024.png", 3));
    EXPECT_EQ(max_abs_error(testing::decimate(input, 32), m.at("input.dec32")), 0.0);
    const auto start = std::chrono::steady_clock::now();
    const EncoderOutputs out = ImageEncoder(m.config, m.weights).encode(input);
    std::printf("  tiny encode: %.2f s\n",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    EXPECT_LE(max_abs_error(out.decoder.image_embed, m.at("image_embed")), kLogitTolerance);
    EXPECT_LE(max_abs_error(testing::decimate(out.decoder.feat_s1, 4), m.at("feat_s1.dec4")), kLogitTolerance);
    EXPECT_LE(max_abs_error(testing::decimate(out.decoder.feat_s0, 8), m.at("feat_s0.dec8")), kLogitTolerance);
    m.features = {m.at("image_embed"), out.decoder.feat_s1, out.decoder.feat_s0};
    return m;
  }();
  return c;
}

TEST(MaskDecoderTiny, AllRunsMatchGoldens) {
  const auto& c = tiny_decoder_case();
  const SamHeads heads(c.config, c.weights);
  EXPECT_LE(max_abs_error(testing::decimate(heads.dense_pe(), 4), c.at("dense_pe.dec4")), kLogitTolerance);
  const int runs = testing::expect_golden_runs_match(
      c, heads, {kLogitTolerance, kScoreTolerance}, [&](const testing::GoldenRun& r, const MaskPrediction& pred) {
        const std::string& name = r.prompt.name;
        if (c.golden.tensors.count(name + ".dense.dec4")) {
          EXPECT_LE(max_abs_error(testing::decimate(pred.dense_embeddings, 4), c.at(name + ".dense.dec4")),
                    kLogitTolerance);
        }
        EXPECT_LE(max_abs_error(testing::decimate(pred.low_res_masks, 4), c.at(r.key_prefix + ".low_res_masks.dec4")),
                  kLogitTolerance);
        EXPECT_EQ(pred.masks.shape(), (Shape{r.multimask ? 3 : 1, 512, 512}));
        EXPECT_LE(max_abs_error(testing::decimate(pred.masks, 8), c.at(r.key_prefix + ".masks.dec8")),
                  kLogitTolerance);
        // The PNG is full size but the golden logits are decimated, so pixels are
        // exempt where OUR logit is within 2x the tolerance of 0: that covers every
        // pixel whose golden logit is within the tolerance, given |ours - golden| <= tolerance.
        testing::expect_thresholded_masks_match(
            pred.masks, testing::tiny_dir() + "/masks/" + r.key_prefix + ".png",
            [&](int64_t i) { return std::fabs(pred.masks[i]) > 2 * kLogitTolerance; });
      });
  EXPECT_EQ(runs, 10);
}

TEST(MaskDecoderTiny, BatchEqualsOneByOne) {
  const auto& c = tiny_decoder_case();
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
