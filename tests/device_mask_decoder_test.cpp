// The mask decoder written against Backend (model/device_mask_decoder.h) on the
// CPU backend: every micro golden prompt (a mask input among them) against the
// official goldens at the decoder's tolerances and against the CPU decoder
// (MaskDecoder), multimask and single mask. vulkan_mask_decoder_test.cpp runs
// the same on the Vulkan backend.
#include "model/device_mask_decoder.h"

#include <gtest/gtest.h>

#include <memory>

#include "backends/cpu_backend.h"
#include "core/error.h"
#include "device_mask_decoder_goldens.h"

namespace sam2rt::testing {
namespace {

TEST(DeviceMaskDecoderMicro, OnTheCpuBackendMatchesGoldens) {
  const auto backend = std::make_shared<CpuBackend>();
  const auto decoder = micro_decoder(backend);
  EXPECT_EQ(expect_micro_goldens(*decoder, upload_decoder_features(*backend, micro_decoder_case().features)).runs, 10);
  EXPECT_GT(decoder->last_ops().ops, 0);
}

TEST(DeviceMaskDecoderMicro, RefusesFeaturesOfAnotherShape) {
  const auto backend = std::make_shared<CpuBackend>();
  const auto decoder = micro_decoder(backend);
  const DecoderCase& c = micro_decoder_case();
  DeviceDecoderFeatures features = upload_decoder_features(*backend, c.features);
  features.feat_s0 = features.feat_s1;
  EXPECT_THROW(decoder->predict_masks(features, Tensor({1, 0, c.config.embed_dim()})), Error);
}

}  // namespace
}  // namespace sam2rt::testing
