#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "core/tensor.h"
#include "core/weights.h"
#include "model/config.h"

namespace sam2rt {

// What the memory encoder gives for one frame, channels-last rows [E*E, mem_dim]:
// maskmem_features and maskmem_pos_enc (SAM2Base._encode_new_memory's outputs
// flattened as _prepare_memory_conditioned_features reads them).
struct MemoryEncoderOutput {
  Tensor features;
  Tensor pos_enc;
};

// memory_encoder.* of SAM 2.1 (MemoryEncoder.forward with skip_mask_sigmoid,
// as _encode_new_memory calls it), written against a Backend in the official
// order of operations: the mask downsampled by MaskDownSampler (conv, LayerNorm2d,
// GELU per stride-2 step, then a 1x1 conv), the frame's feature through
// pix_feat_proj plus that mask, the Fuser's CXBlocks (depthwise 7x7, LayerNorm,
// pwconv1, GELU, pwconv2, gamma, residual), out_proj to mem_dim, the sine
// position encoding of the map; then no_obj_embed_spatial where the object is
// absent. Nothing is rounded to bfloat16 here: the official predictor stores
// the features as bfloat16, which the tracker does with
// round_to_bfloat16_in_place. Thread-safe: an encode holds the backend's run_mutex().
class MemoryEncoder {
 public:
  // Weights are made resident here; Error for a config the video path does not take.
  MemoryEncoder(const ModelConfig& config, const WeightMap& weights, std::shared_ptr<Backend> backend);
  ~MemoryEncoder();

  // pix_feat: the frame's top-level feature [E, E, C] (or [E*E, C]) on this
  // backend: the FPN neck's level 2 as it comes out, WITHOUT no_mem_embed
  // (which only the image path's image_embed has). mask_for_mem [1, S, S]
  // (S = image_size): the high-res mask logits already made the memory
  // encoder's input (sigmoid, or > 0 binarized, times sigmoid_scale_for_mem_enc,
  // plus sigmoid_bias_for_mem_enc). object_absent: the frame's object score
  // logit is <= 0, which adds no_obj_embed_spatial to every feature row (where
  // the checkpoint has it, as SAM 2.1's do). Error naming a wrong shape.
  MemoryEncoderOutput encode(const DeviceTensor& pix_feat, const Tensor& mask_for_mem, bool object_absent) const;
  // The same from a host pix_feat [E, E, C] or [E*E, C].
  MemoryEncoderOutput encode(const Tensor& pix_feat, const Tensor& mask_for_mem, bool object_absent) const;

  // maskmem_pos_enc of every frame (it depends on the map's size only), [E*E, mem_dim].
  const Tensor& position_encoding() const { return position_encoding_; }

 private:
  struct DownsampleStep;
  struct CxBlock;

  // encode, the caller holding the backend's run_mutex().
  MemoryEncoderOutput encode_locked(const DeviceTensor& pix_feat, const Tensor& mask_for_mem, bool object_absent) const;

  ModelConfig config_;
  std::shared_ptr<Backend> backend_;  // declared first: destroyed after everything resident on it
  std::vector<DownsampleStep> downsampler_;
  LinearHandle downsampler_out_;  // the final 1x1 conv to embed_dim
  LinearHandle pix_feat_proj_;
  std::vector<CxBlock> fuser_;
  LinearHandle out_proj_;              // absent (in_features 0) when out_dim == in_dim: nn.Identity
  DeviceTensor no_obj_embed_spatial_;  // [mem_dim]; empty without one
  Tensor position_encoding_;
};

// mask_for_mem of _encode_new_memory from a frame's high-res mask logits
// [1, S, S]: (logits > 0) as 0/1 when `binarize` (a mask from clicks, as
// binarize_mask_from_pts_for_mem_enc), else their sigmoid; then times
// sigmoid_scale_for_mem_enc plus sigmoid_bias_for_mem_enc, in float32.
Tensor memory_encoder_mask(const Tensor& high_res_logits, bool binarize, const ModelConfig& config);

// x rounded to bfloat16 and widened back, in place, round to nearest even (as
// torch's .to(torch.bfloat16) on finite values; NaN stays NaN): how the
// official video predictor stores maskmem_features.
void round_to_bfloat16_in_place(Tensor& x);

}  // namespace sam2rt
