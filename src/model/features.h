#pragma once

#include <cstdint>

#include "backends/device_tensor.h"
#include "core/tensor.h"
#include "model/config.h"

namespace sam2rt {

// What the mask decoder needs from the image encoder (SAM2ImagePredictor._features),
// all NCHW, batch 1, C = config.embed_dim(), E = config.image_embedding_size():
//   image_embed [1, C, E, E]      = neck level 2 + no_mem_embed
//   feat_s1     [1, C/4, 2E, 2E]  = sam_mask_decoder.conv_s1(neck level 1)
//   feat_s0     [1, C/8, 4E, 4E]  = sam_mask_decoder.conv_s0(neck level 0)
struct DecoderFeatures {
  Tensor image_embed;
  Tensor feat_s1;
  Tensor feat_s0;
};

// The NCHW shapes above for one model, and their sizes in floats.
struct DecoderFeatureShapes {
  Shape image_embed, feat_s1, feat_s0;
  int64_t numel() const { return shape_numel(image_embed) + shape_numel(feat_s1) + shape_numel(feat_s0); }
};

inline DecoderFeatureShapes decoder_feature_shapes(const ModelConfig& config) {
  const int64_t c = config.embed_dim(), e = config.image_embedding_size();
  return {{1, c, e, e}, {1, c / 4, 2 * e, 2 * e}, {1, c / 8, 4 * e, 4 * e}};
}

// The same features on a backend, channels-last (the layout the encoder
// computes them in): image_embed [E, E, C], feat_s1 [2E, 2E, C/4], feat_s0 [4E, 4E, C/8].
struct DeviceDecoderFeatures {
  DeviceTensor image_embed, feat_s1, feat_s0;
};

}  // namespace sam2rt
