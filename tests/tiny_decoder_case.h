#pragma once

// The Tiny decoder case (mask_decoder_tiny_test.cpp, vulkan_mask_decoder_test.cpp).
// Its goldens store image_embed in full but the high-resolution features only
// decimated, so feat_s1/feat_s0 come from our image encoder (itself checked
// against the decimated goldens here first). The input tensor is rebuilt from
// images/astronaut_1024.png, the bit-exact PIL resize.

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>

#include "decoder_goldens.h"
#include "feature_compare.h"
#include "model/image_encoder.h"
#include "model/config.h"
#include "model/sam_heads.h"

namespace sam2rt::testing {

// torchvision ToTensor + Normalize in float32 on an S x S RGB image.
inline Tensor normalized_input(const PngImage& png) {
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

// The encoder outputs' tolerance against the goldens (the decoder's logit tolerance).
constexpr double kTinyFeatureTolerance = 1e-4;

inline const DecoderCase& tiny_decoder_case() {
  static const DecoderCase c = [] {
    DecoderCase m = load_decoder_case(tiny_dir(), preset_config("tiny"));
    const Tensor input = normalized_input(read_png(fixtures_dir() + "/images/astronaut_1024.png", 3));
    EXPECT_EQ(max_abs_error(decimate(input, 32), m.at("input.dec32")), 0.0);
    const auto start = std::chrono::steady_clock::now();
    const EncoderOutputs out = ImageEncoder(m.config, m.weights).encode(input);
    std::printf("  tiny encode: %.2f s\n",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    EXPECT_LE(max_abs_error(out.decoder.image_embed, m.at("image_embed")), kTinyFeatureTolerance);
    EXPECT_LE(max_abs_error(decimate(out.decoder.feat_s1, 4), m.at("feat_s1.dec4")), kTinyFeatureTolerance);
    EXPECT_LE(max_abs_error(decimate(out.decoder.feat_s0, 8), m.at("feat_s0.dec8")), kTinyFeatureTolerance);
    m.features = {m.at("image_embed"), out.decoder.feat_s1, out.decoder.feat_s0};
    return m;
  }();
  return c;
}

// What the Tiny goldens store of a run, decimated, against `pred`: the dense
// embedding (mask-input prompts, when computed on the host), the low-res and
// final logits, the thresholded masks.
inline void expect_tiny_run_matches(const DecoderCase& c, const GoldenRun& r, const MaskPrediction& pred,
                                    double logit_tolerance) {
  const std::string& name = r.prompt.name;
  // A device decoder computes a mask input's dense embedding itself (the
  // prediction holds none): the logits below check it there.
  if (c.golden.tensors.count(name + ".dense.dec4") && !pred.dense_embeddings.empty()) {
    EXPECT_LE(max_abs_error(decimate(pred.dense_embeddings, 4), c.at(name + ".dense.dec4")), logit_tolerance);
  }
  EXPECT_LE(max_abs_error(decimate(pred.low_res_masks, 4), c.at(r.key_prefix + ".low_res_masks.dec4")),
            logit_tolerance);
  EXPECT_EQ(pred.masks.shape(), (Shape{r.multimask ? 3 : 1, 512, 512}));
  EXPECT_LE(max_abs_error(decimate(pred.masks, 8), c.at(r.key_prefix + ".masks.dec8")), logit_tolerance);
  // The PNG is full size but the golden logits are decimated, so pixels are
  // exempt where OUR logit is within 2x the tolerance of 0: that covers every
  // pixel whose golden logit is within the tolerance, given |ours - golden| <= tolerance.
  expect_thresholded_masks_match(pred.masks, tiny_dir() + "/masks/" + r.key_prefix + ".png",
                                 [&](int64_t i) { return std::fabs(pred.masks[i]) > 2 * logit_tolerance; });
}

}  // namespace sam2rt::testing
