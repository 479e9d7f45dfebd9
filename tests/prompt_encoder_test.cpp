#include "model/prompt_encoder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/error.h"
#include "decoder_goldens.h"
#include "model/prompt.h"

namespace sam2rt {
namespace {

using testing::max_abs_error;
using testing::micro_decoder_case;

constexpr double kFeatureTolerance = 1e-4;

TEST(PromptEncoderMicro, DensePeMatchesGolden) {
  const auto& c = micro_decoder_case();
  const PromptEncoder encoder(c.config, c.weights);
  EXPECT_LE(max_abs_error(encoder.dense_pe(), c.at("dense_pe")), kFeatureTolerance);
}

TEST(PromptEncoderMicro, SparseAndDenseMatchGoldens) {
  const auto& c = micro_decoder_case();
  const PromptEncoder encoder(c.config, c.weights);
  ASSERT_EQ(c.prompts.size(), 5u);
  for (const auto& g : c.prompts) {
    SCOPED_TRACE(g.name);
    const Tensor sparse = encoder.embed_sparse(g.prompt, c.orig_w, c.orig_h);
    const Tensor& want_sparse = c.at(g.name + ".sparse");
    EXPECT_EQ(sparse.shape(), want_sparse.shape());
    EXPECT_EQ(PromptEncoder::sparse_token_count(g.prompt), want_sparse.dim(1));
    EXPECT_LE(max_abs_error(sparse, want_sparse), kFeatureTolerance);
    const Tensor dense = encoder.embed_dense(g.prompt);
    EXPECT_EQ(dense.shape(), c.at(g.name + ".dense").shape());
    EXPECT_LE(max_abs_error(dense, c.at(g.name + ".dense")), kFeatureTolerance);
  }
}

TEST(PromptEncoderMicro, MaskOnlyPromptHasNoSparseTokens) {
  const auto& c = micro_decoder_case();
  const PromptEncoder encoder(c.config, c.weights);
  Prompt prompt;
  prompt.mask_input = c.at("p5_point_mask.mask_input");
  EXPECT_EQ(encoder.embed_sparse(prompt, c.orig_w, c.orig_h).dim(1), 0);
  EXPECT_LE(max_abs_error(encoder.embed_dense(prompt), c.at("p5_point_mask.dense")), kFeatureTolerance);
}

// --- validate_prompt ---

class ValidatePrompt : public ::testing::Test {
 protected:
  ModelConfig config = load_config_yaml(testing::micro_dir() + "/sam2.1_micro.yaml");
  static constexpr int kW = 288, kH = 112;
  Prompt one_point() const { return Prompt{{{10.0f, 20.0f, 1}}, std::nullopt, Tensor()}; }

  void expect_error(const Prompt& p, const std::string& fragment) const {
    try {
      validate_prompt(p, kW, kH, config);
      ADD_FAILURE() << "no Error for a prompt that should be refused (" << fragment << ")";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  }
};

TEST_F(ValidatePrompt, AcceptsGoodPrompts) {
  EXPECT_NO_THROW(validate_prompt(one_point(), kW, kH, config));
  Prompt box_and_mask = one_point();
  box_and_mask.box = std::array<float, 4>{0.0f, 0.0f, 288.0f, 112.0f};
  box_and_mask.mask_input = Tensor({1, 64, 64});
  EXPECT_NO_THROW(validate_prompt(box_and_mask, kW, kH, config));
  Prompt mask_only;
  mask_only.mask_input = Tensor({1, 64, 64});
  EXPECT_NO_THROW(validate_prompt(mask_only, kW, kH, config));
}

TEST_F(ValidatePrompt, RefusesNonFiniteCoordinates) {
  Prompt p = one_point();
  p.points.push_back({std::numeric_limits<float>::quiet_NaN(), 3.0f, 1});
  expect_error(p, "point 1 has a non-finite");
  Prompt q = one_point();
  q.box = std::array<float, 4>{0.0f, 0.0f, std::numeric_limits<float>::infinity(), 5.0f};
  expect_error(q, "non-finite");
}

TEST_F(ValidatePrompt, RefusesBadLabel) {
  Prompt p = one_point();
  p.points[0].label = 5;
  expect_error(p, "label 5");
}

TEST_F(ValidatePrompt, RefusesInvertedBox) {
  Prompt p;
  p.box = std::array<float, 4>{50.0f, 10.0f, 40.0f, 20.0f};
  expect_error(p, "x1 < x0");
  p.box = std::array<float, 4>{10.0f, 30.0f, 40.0f, 20.0f};
  expect_error(p, "y1 < y0");
}

TEST_F(ValidatePrompt, RefusesCoordinatesOutsideTheImage) {
  Prompt p = one_point();
  p.points.push_back({300.0f, 5.0f, 0});
  expect_error(p, "point 1 (300, 5) lies outside the 288x112 image");
  Prompt q = one_point();
  q.points[0].y = -1.0f;
  expect_error(q, "point 0");
  Prompt r;
  r.box = std::array<float, 4>{0.0f, 0.0f, 100.0f, 113.0f};
  expect_error(r, "outside the 288x112 image");
}

TEST_F(ValidatePrompt, RefusesTooManyPoints) {
  Prompt p;
  p.points.assign(kMaxPoints + 1, PointPrompt{1.0f, 1.0f, 1});
  expect_error(p, "too many points");
  p.points.resize(kMaxPoints);
  EXPECT_NO_THROW(validate_prompt(p, kW, kH, config));
}

TEST_F(ValidatePrompt, RefusesWrongMaskShape) {
  Prompt p = one_point();
  p.mask_input = Tensor({1, 32, 32});
  expect_error(p, "[1, 64, 64]");
  p.mask_input = Tensor({64, 64});
  expect_error(p, "mask input has shape [64, 64]");
  p.mask_input = Tensor::filled({1, 64, 64}, std::numeric_limits<float>::quiet_NaN());
  expect_error(p, "non-finite");
}

TEST_F(ValidatePrompt, RefusesEmptyPrompt) { expect_error(Prompt{}, "empty prompt"); }

TEST_F(ValidatePrompt, RefusesBadImageSize) {
  EXPECT_THROW(validate_prompt(one_point(), 0, kH, config), Error);
}

}  // namespace
}  // namespace sam2rt
