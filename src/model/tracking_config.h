#pragma once

#include "model/config.h"

namespace sam2rt {

// SAM2Base's tracking options and SAM2VideoPredictor's, with the values every
// SAM 2.1 config sets (sam2/configs/sam2.1/*.yaml) and the ones
// build_sam2_video_predictor adds (apply_postprocessing: binarized memory
// masks of interacted frames, holes of up to 8 low-res pixels filled). What a
// setting means is the official docstring's; the names are its. Left out:
// soft_no_obj_ptr (false in every SAM 2.1 config) and
// non_overlap_masks_for_mem_enc (it acts across a batch of objects, and the
// predictor encodes each object's memory alone: a no-op).
struct TrackingConfig {
  int num_maskmem = 7;                        // the current frame + 6 previous frames' memories
  int max_cond_frames_in_attn = -1;           // -1: every conditioning frame
  int memory_temporal_stride_for_eval = 1;
  int max_obj_ptrs_in_encoder = 16;
  float sigmoid_scale_for_mem_enc = 20.0f;
  float sigmoid_bias_for_mem_enc = -10.0f;
  bool binarize_mask_from_pts_for_mem_enc = true;
  bool use_mask_input_as_output_without_sam = true;
  bool directly_add_no_mem_embed = true;
  bool multimask_output_in_sam = true;
  int multimask_min_pt_num = 0;
  int multimask_max_pt_num = 1;
  bool multimask_output_for_tracking = true;
  bool use_multimask_token_for_obj_ptr = true;
  bool use_obj_ptrs_in_encoder = true;
  bool add_tpos_enc_to_obj_ptrs = true;
  bool proj_tpos_enc_in_obj_ptrs = true;
  bool use_signed_tpos_enc_to_obj_ptrs = true;
  bool only_obj_ptrs_in_the_past_for_eval = true;
  bool fixed_no_obj_ptr = true;
  bool use_mlp_for_obj_ptr_proj = true;

  // SAM2VideoPredictor.
  int fill_hole_area = 8;
  bool non_overlap_masks = false;
  // Not supported: the official predictor at 2b90b9f5 fails with it (it
  // calls an undefined _clear_obj_non_cond_mem_around_input); VideoPredictor
  // refuses it.
  bool clear_non_cond_mem_around_input = false;
  bool add_all_frames_to_correct_as_cond = false;
};

// The tracking options of a model: its own memory sizes and mask scaling (the
// YAML's num_maskmem, max_obj_ptrs_in_encoder, sigmoid_scale/bias_for_mem_enc),
// the SAM 2.1 values for the rest.
inline TrackingConfig tracking_config(const ModelConfig& config) {
  TrackingConfig tracking;
  tracking.num_maskmem = config.num_maskmem;
  tracking.max_obj_ptrs_in_encoder = config.max_obj_ptrs_in_encoder;
  tracking.sigmoid_scale_for_mem_enc = static_cast<float>(config.sigmoid_scale_for_mem_enc);
  tracking.sigmoid_bias_for_mem_enc = static_cast<float>(config.sigmoid_bias_for_mem_enc);
  return tracking;
}

// NO_OBJ_SCORE of sam2_base.py: the mask logits of an object judged absent.
inline constexpr float kNoObjectScore = -1024.0f;

}  // namespace sam2rt
