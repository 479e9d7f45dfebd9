#pragma once

#include "backends/backend.h"
#include "core/weights.h"
#include "model/config.h"

namespace sam2rt {

// sam_prompt_encoder.mask_downscaling of SAM 2.1 (what PromptEncoder::embed_dense
// computes from a mask input) written against a Backend: conv 2x2 stride 2,
// LayerNorm2d, GELU, conv 2x2 stride 2, LayerNorm2d, GELU, conv 1x1, on
// channels-last maps. The masks of a batch of prompts are stacked along the
// height: a 2x2 stride-2 conv reads only its own 2x2 block of input, so each
// prompt's rows of every map are its own downscaling's, computed by the same
// operations.
class DeviceMaskDownscaling {
 public:
  // Weights are made resident here.
  DeviceMaskDownscaling(const ModelConfig& config, const WeightMap& weights, Backend& backend);

  // masks [1, 1, B * L, L] (B prompts' mask inputs, L the low-res mask size)
  // -> their dense embeddings [B * E * E, C], each prompt's E x E map as rows of C.
  DeviceTensor operator()(Backend& backend, const DeviceTensor& masks) const;

 private:
  // One conv 2x2 stride 2 + LayerNorm2d + GELU; x [1, Cin, H, W] -> [H/2, W/2, Cout].
  struct DownscalingStep {
    DeviceTensor conv_weight, conv_bias, norm_weight, norm_bias;
    DeviceTensor operator()(Backend& backend, const DeviceTensor& x) const;
  };
  DownscalingStep first_, second_;
  LinearHandle pointwise_;  // the 1x1 conv, [C, mask_in_chans]
};

}  // namespace sam2rt
