// The predictor with the model on the Vulkan backend (lavapipe in CI,
// validation on): an image crosses to the device once and its features stay
// there; a prompt is one upload (its tokens, and its mask input if it has
// one) and one download (its outputs); the host features come down only
// when features() asks for them, once per image and bit for bit what the
// encode downloaded before.
#ifdef SAM2RT_VULKAN

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "api/predictor.h"
#include "backends/vulkan/vulkan_backend.h"
#include "encoder_goldens.h"
#include "io/image.h"
#include "model/synthetic_weights.h"
#include "test_paths.h"
#include "vulkan_test_context.h"

namespace sam2rt::testing {
namespace {

class VulkanPredictorMicro : public VulkanBackendTest {
 protected:
  void SetUp() override {
    device_ = backend();
    const ModelConfig config = micro_config();
    model_ = std::make_shared<const Sam2Model>(config, synthetic_weights(config, 0), device_);
    ASSERT_TRUE(model_->heads().decodes_on_device());
    photo_ = decode_image_file(fixtures_dir() + "/images/chelsea_288x112.png");
  }
  void TearDown() override {
    model_.reset();
    device_.reset();
    VulkanBackendTest::TearDown();
  }

  // The transfers since `before`.
  TransferCounts since(const TransferCounts& before) const {
    const TransferCounts now = device_->transfers();
    return {now.uploads - before.uploads, now.downloads - before.downloads, now.submissions - before.submissions};
  }
  Prompt click() const {
    Prompt p;
    p.points.push_back({static_cast<float>(photo_.width) / 3, static_cast<float>(photo_.height) / 2, 1});
    return p;
  }
  Prompt box() const {
    Prompt p;
    p.box = std::array<float, 4>{10.0f, 10.0f, static_cast<float>(photo_.width) - 20,
                                 static_cast<float>(photo_.height) - 10};
    return p;
  }

  std::shared_ptr<VulkanBackend> device_;
  std::shared_ptr<const Sam2Model> model_;
  RgbImage photo_;
};

void expect_same_bits(const Tensor& a, const Tensor& b, const char* name) {
  ASSERT_EQ(a.shape(), b.shape()) << name;
  EXPECT_EQ(std::memcmp(a.data(), b.data(), sizeof(float) * a.numel()), 0) << name;
}

void expect_same_features(const DecoderFeatures& a, const DecoderFeatures& b) {
  expect_same_bits(a.image_embed, b.image_embed, "image_embed");
  expect_same_bits(a.feat_s1, b.feat_s1, "feat_s1");
  expect_same_bits(a.feat_s0, b.feat_s0, "feat_s0");
}

TEST_F(VulkanPredictorMicro, AnImageIsOneUploadAndAPromptOneUploadAndOneDownload) {
  Predictor predictor(model_);
  for (int image = 0; image < 2; ++image) {  // recorded, then replayed
    SCOPED_TRACE(image);
    TransferCounts before = device_->transfers();
    predictor.set_image(photo_);
    TransferCounts crossed = since(before);
    EXPECT_EQ(crossed.uploads, 1);
    EXPECT_EQ(crossed.downloads, 0);
    EXPECT_TRUE(predictor.encoder_outputs().decoder.image_embed.empty());
    EXPECT_TRUE(predictor.encoder_outputs().neck_levels.empty());

    before = device_->transfers();
    const MaskPrediction prediction = predictor.predict(click(), true);
    crossed = since(before);
    EXPECT_EQ(crossed.uploads, 1);
    EXPECT_EQ(crossed.downloads, 1);
    EXPECT_EQ(prediction.all_iou.size(), 4u);

    // A batch per token count: the clicks (a point and the padding point), the
    // box (its corners and the padding point).
    before = device_->transfers();
    EXPECT_EQ(predictor.predict_batch({click(), box(), click()}, false).size(), 3u);
    crossed = since(before);
    EXPECT_EQ(crossed.uploads, 2);
    EXPECT_EQ(crossed.downloads, 2);
    EXPECT_EQ(crossed.submissions, 2);
  }
}

TEST_F(VulkanPredictorMicro, FeaturesAreDownloadedOnceAsTheEncodeDownloadedThem) {
  Predictor resident(model_), downloaded(model_);
  resident.set_image(photo_);
  downloaded.set_image(photo_, {.download_outputs = true});  // the NCHW outputs converted on the device
  EXPECT_EQ(downloaded.encoder_outputs().neck_levels.size(), 3u);
  ASSERT_FALSE(downloaded.encoder_outputs().decoder.image_embed.empty());

  TransferCounts before = device_->transfers();
  const DecoderFeatures& features = resident.features();
  EXPECT_EQ(since(before).downloads, 3);
  expect_same_features(features, downloaded.encoder_outputs().decoder);
  before = device_->transfers();
  EXPECT_EQ(&resident.features(), &features);
  EXPECT_EQ(since(before).downloads, 0);

  // Asked from several threads at once: still one download of each feature.
  Predictor fresh(model_);
  fresh.set_image(photo_);
  before = device_->transfers();
  std::vector<std::thread> threads;
  std::vector<const DecoderFeatures*> seen(4);
  for (size_t i = 0; i < seen.size(); ++i) {
    threads.emplace_back([&fresh, &seen, i] { seen[i] = &fresh.features(); });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(since(before).downloads, 3);
  for (const DecoderFeatures* f : seen) EXPECT_EQ(f, seen.front());
  expect_same_features(*seen.front(), features);
}

TEST_F(VulkanPredictorMicro, AMaskInputPromptIsDecodedOnTheDeviceWithoutTheFeatures) {
  Predictor resident(model_), downloaded(model_);
  resident.set_image(photo_);
  downloaded.set_image(photo_, {.download_outputs = true});
  Prompt refine = click();
  refine.mask_input = resident.predict(click(), false).low_res_masks.clone();

  const TransferCounts before = device_->transfers();
  const MaskPrediction decoded = resident.predict(refine, true);
  EXPECT_EQ(since(before).uploads, 1);  // its tokens and its mask input, which the device downscales
  EXPECT_EQ(since(before).downloads, 1);
  // The image's features kept on the device and those the encode also downloaded: the same bits.
  const MaskPrediction expected = downloaded.predict(refine, true);
  expect_same_bits(decoded.low_res_masks, expected.low_res_masks, "low_res_masks");
  EXPECT_EQ(decoded.all_iou, expected.all_iou);
  EXPECT_EQ(decoded.object_score_logit, expected.object_score_logit);
}

TEST_F(VulkanPredictorMicro, FeaturesSetFromTheHostAreUploadedOnce) {
  Predictor source(model_), predictor(model_);
  source.set_image(photo_);
  const DecoderFeatures features = source.features();
  TransferCounts before = device_->transfers();
  predictor.set_features(features, photo_.width, photo_.height);
  EXPECT_EQ(since(before).uploads, 3);
  EXPECT_EQ(since(before).downloads, 0);
  before = device_->transfers();
  expect_same_features(predictor.features(), features);
  predictor.predict(click(), true);
  EXPECT_EQ(since(before).uploads, 1);
  EXPECT_EQ(since(before).downloads, 1);
}

}  // namespace
}  // namespace sam2rt::testing

#endif
