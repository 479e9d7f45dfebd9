#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backends/backend.h"
#include "core/tensor.h"
#include "core/weights.h"
#include "model/config.h"
#include "model/features.h"
#include "model/image_encoder.h"
#include "model/memory_attention.h"
#include "model/memory_bank.h"
#include "model/memory_encoder.h"
#include "model/object_pointer.h"
#include "model/prompt_encoder.h"
#include "model/sam_heads.h"
#include "model/tracking_config.h"

namespace sam2rt {

// One frame's image features as the tracker reads them
// (SAM2VideoPredictor._get_image_feature), channels-last rows where noted.
struct FrameFeatures {
  DecoderFeatures decoder;  // image_embed = neck level 2 + no_mem_embed (what a first prompt decodes on), feat_s1, feat_s0
  Tensor vision_feats;      // [E*E, C]: neck level 2 (current_vision_feats[-1])
  Tensor vision_pos;        // [E*E, C]: its sine position encoding (current_vision_pos_embeds[-1]), shared, read-only
};

// What EncodeOptions a frame's encode needs for frame_features().
EncodeOptions frame_encode_options();

// A frame's prompt for one object: points in the model frame (box corners
// first, labels 2 and 3), or a mask [1, S, S] of 0/1 at the model's input size.
struct FramePrompt {
  std::vector<PromptEncoder::ModelPoint> points;
  Tensor mask;
  bool has_points() const { return !points.empty(); }
  bool has_mask() const { return !mask.empty(); }
};

// SAM2Base.track_step's outputs for one object on one frame.
struct TrackStepOutput {
  Tensor low_res_masks;   // [1, L, L] (pred_masks, before hole filling)
  Tensor high_res_masks;  // [1, S, S] (pred_masks_high_res)
  Tensor obj_ptr;         // [C]
  float object_score_logit = 0;
};

// The tracking half of SAM2Base (sam2/modeling/sam2_base.py), for one object
// at a time (batch 1, as SAM2VideoPredictor runs each object): a frame's
// features conditioned on the object's memories (memory attention), the SAM
// heads on them, the object pointer, and the memory encoder that turns a
// frame's mask into the object's memory of it.
class VideoTracker {
 public:
  VideoTracker(const ModelConfig& config, const TrackingConfig& tracking, const WeightMap& weights,
               const SamHeads& heads, std::shared_ptr<Backend> backend = nullptr);

  const ModelConfig& config() const { return config_; }
  const TrackingConfig& tracking() const { return tracking_; }

  // The features of an encode made with frame_encode_options().
  FrameFeatures frame_features(const EncoderOutputs& encoded) const;

  // SAM2Base._track_step and track_step's outputs (without the memory
  // encoder, encode_memory): a frame with a mask prompt outputs that mask
  // (_use_mask_as_output); otherwise the frame's features conditioned on
  // `outputs`' memories (none on an initial conditioning frame) go through the
  // SAM heads with the prompt's points, if any, and prev_mask_logits
  // ([1, L, L], the frame's earlier logits a correction refines; empty: none).
  TrackStepOutput track_step(const FrameFeatures& frame, int64_t frame_idx, bool is_init_cond_frame,
                             const FramePrompt& prompt, const ObjectOutputs& outputs, int64_t num_frames,
                             bool reverse, const Tensor& prev_mask_logits = {}) const;

  // SAM2Base._encode_new_memory on high_res_masks [1, S, S]: the memory
  // features [E*E, mem_dim], rounded to bfloat16 as the video predictor
  // stores them.
  Tensor encode_memory(const FrameFeatures& frame, const Tensor& high_res_masks, float object_score_logit,
                       bool is_mask_from_pts) const;

  // maskmem_pos_enc [E*E, mem_dim]: the same for every frame.
  const Tensor& memory_pos_enc() const { return memory_pos_enc_; }

  // SAM2Base._use_multimask.
  bool use_multimask(bool is_init_cond_frame, const FramePrompt& prompt) const;

 private:
  // _prepare_memory_conditioned_features: pix_feat_with_mem [E*E, C].
  Tensor memory_conditioned_features(const FrameFeatures& frame, int64_t frame_idx, bool is_init_cond_frame,
                                     const ObjectOutputs& outputs, int64_t num_frames, bool reverse) const;
  // _forward_sam_heads on image_embed [E*E, C] with the frame's high-resolution features.
  TrackStepOutput forward_sam_heads(const FrameFeatures& frame, const Tensor& image_embed,
                                    const std::vector<PromptEncoder::ModelPoint>& points, const Tensor& mask_input,
                                    bool multimask) const;
  // _use_mask_as_output.
  TrackStepOutput use_mask_as_output(const FrameFeatures& frame, const Tensor& mask) const;

  ModelConfig config_;
  TrackingConfig tracking_;
  const SamHeads& heads_;
  PromptEncoder prompt_encoder_;
  MemoryEncoder memory_encoder_;
  MemoryAttention memory_attention_;
  ObjectPointerHeads pointer_heads_;
  Tensor no_mem_embed_;    // [C]
  Tensor mask_downsample_weight_, mask_downsample_bias_;
  Tensor memory_pos_enc_;  // [E*E, mem_dim]
  Tensor vision_pos_;      // [E*E, C]: the neck's level-2 position encoding, every frame's
};

}  // namespace sam2rt
