#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "core/tensor.h"
#include "model/tracking_config.h"

namespace sam2rt {

// One frame's tracking output for one object, what the video predictor keeps
// of it (SAM2VideoPredictor's compact_current_out; maskmem_pos_enc, the same
// for every frame, is kept once by the tracker).
struct FrameOutput {
  Tensor maskmem_features;  // [E*E, mem_dim], values rounded to bfloat16; empty until the memory encoder ran
  Tensor pred_masks;        // [1, L, L] low-res mask logits, holes filled
  Tensor obj_ptr;           // [C]
  float object_score_logit = 0;
};

// An object's outputs by frame index (output_dict_per_obj[obj_idx]): the
// conditioning frames (those with prompts) and the tracked ones.
struct ObjectOutputs {
  std::map<int64_t, FrameOutput> cond;
  std::map<int64_t, FrameOutput> non_cond;
};

// What SAM2Base._prepare_memory_conditioned_features attends to on a frame
// that is not an initial conditioning frame.
struct MemorySelection {
  // Spatial memories in the order they are concatenated: the selected
  // conditioning frames (t_pos 0), then the previous frames, t_pos 1 (the
  // farthest) to num_maskmem - 1 (the nearest).
  struct Memory {
    const FrameOutput* output;
    int t_pos;
  };
  std::vector<Memory> memories;
  // Object pointers in order, each with its temporal position: the signed
  // (or absolute) frame distance it is encoded with.
  struct Pointer {
    const FrameOutput* output;
    int64_t position;
  };
  std::vector<Pointer> pointers;
  int64_t max_obj_ptrs_in_encoder = 0;  // min(num_frames, the config's): t_diff_max + 1
};

// The choices of _prepare_memory_conditioned_features (and of
// select_closest_cond_frames) for `frame_idx` of a video of `num_frames`
// frames, tracked forwards or in reverse. Error without a conditioning frame.
MemorySelection select_memories(const ObjectOutputs& outputs, int64_t frame_idx, int64_t num_frames, bool reverse,
                                const TrackingConfig& config);

// select_closest_cond_frames: the selected conditioning frames' indices and
// the unselected ones (up to max_cond_frame_num, -1 meaning all).
struct CondFrameSplit {
  std::vector<int64_t> selected, unselected;
};
CondFrameSplit select_closest_cond_frames(int64_t frame_idx, const std::map<int64_t, FrameOutput>& cond,
                                          int max_cond_frame_num);

}  // namespace sam2rt
