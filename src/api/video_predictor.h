#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "api/sam2_model.h"
#include "core/tensor.h"
#include "model/memory_bank.h"
#include "model/tracking_config.h"
#include "model/video_tracker.h"

namespace sam2rt {

// The frames a VideoPredictor tracks through: their count, the original size,
// and each frame preprocessed ([1, 3, S, S], as the official loader makes it),
// read when tracking reaches it (the predictor keeps no frames).
struct VideoFrames {
  int64_t num_frames = 0;
  int width = 0, height = 0;
  std::function<Tensor(int64_t frame_idx)> load;
};

// The masks of every object on one frame, as SAM2VideoPredictor returns them:
// (frame_idx, obj_ids, video_res_masks [objects, 1, H, W] logits).
struct VideoFrameMasks {
  int64_t frame_idx = 0;
  std::vector<int64_t> obj_ids;
  Tensor video_res_masks;
};

struct VideoPredictorOptions {
  // The tracking options; absent: the model's (tracking_config), as
  // build_sam2_video_predictor makes them.
  std::optional<TrackingConfig> tracking;
  // Keep every tracked frame's output, as the official predictor does (a later
  // correction on any frame refines its earlier mask; memory grows with the
  // video). Off, only the outputs tracking can still read are kept: those
  // within the memory and object-pointer window of the frame being tracked or
  // of a prompted frame, so memory stays flat however long the video.
  bool keep_all_outputs = true;
};

// SAM2VideoPredictor (sam2/sam2_video_predictor.py) for one video: objects
// prompted with points, boxes or masks on any frames, then tracked through
// the video, each object separately, as the official predictor does. Method
// names and semantics are the official ones; Error where it raises. It runs
// where the model runs (Sam2Model::backend()): on a device, the encoder, the
// mask decoder and both memory modules.
class VideoPredictor {
 public:
  VideoPredictor(std::shared_ptr<const Sam2Model> model, VideoFrames frames, VideoPredictorOptions options = {});

  int64_t num_frames() const { return frames_.num_frames; }
  int video_width() const { return frames_.width; }
  int video_height() const { return frames_.height; }
  const std::vector<int64_t>& obj_ids() const { return obj_ids_; }

  // points [P] as (x, y) with labels (1 positive, 0 negative) and/or a box
  // (x0, y0, x1, y1), in video pixels (normalize_coords) or already divided by
  // the video's width and height.
  VideoFrameMasks add_new_points_or_box(int64_t frame_idx, int64_t obj_id,
                                        const std::vector<std::array<float, 2>>& points,
                                        const std::vector<int>& labels, bool clear_old_points = true,
                                        bool normalize_coords = true,
                                        const std::optional<std::array<float, 4>>& box = std::nullopt);
  // mask [H', W'] (nonzero = object), any size: resized to the model's input
  // size as the official code does when it is not.
  VideoFrameMasks add_new_mask(int64_t frame_idx, int64_t obj_id, const Tensor& mask);

  // propagate_in_video as a sequence: start() does the preflight and fixes the
  // frame order, each next() tracks one frame (every object) and returns its
  // masks, std::nullopt after the last.
  class Propagation {
   public:
    std::optional<VideoFrameMasks> next();
    int64_t frames_total() const { return static_cast<int64_t>(order_.size()); }
    int64_t frames_done() const { return static_cast<int64_t>(position_); }

   private:
    friend class VideoPredictor;
    Propagation(VideoPredictor& predictor, std::vector<int64_t> order, bool reverse)
        : predictor_(&predictor), order_(std::move(order)), reverse_(reverse) {}
    VideoPredictor* predictor_;
    std::vector<int64_t> order_;
    size_t position_ = 0;
    bool reverse_;
  };
  Propagation propagate_in_video(std::optional<int64_t> start_frame_idx = std::nullopt,
                                 std::optional<int64_t> max_frame_num_to_track = std::nullopt, bool reverse = false);

  VideoFrameMasks clear_all_prompts_in_frame(int64_t frame_idx, int64_t obj_id);
  void reset_state();
  // The remaining object ids and the frames whose masks changed (the
  // prompted frames of the removed object, with their new masks).
  std::pair<std::vector<int64_t>, std::vector<VideoFrameMasks>> remove_object(int64_t obj_id, bool strict = false,
                                                                              bool need_output = true);

  // The low-res output an object keeps for a frame (pred_masks, obj_ptr,
  // object score; the goldens compare them), null when it has none.
  const FrameOutput* output(int64_t obj_id, int64_t frame_idx) const;
  // How many frame outputs are held, all objects together (the memory test reads it).
  int64_t outputs_held() const;

 private:
  struct ObjectState {
    std::map<int64_t, std::vector<PromptEncoder::ModelPoint>> point_inputs;
    std::map<int64_t, Tensor> mask_inputs;  // [1, S, S] 0/1
    ObjectOutputs outputs;
    ObjectOutputs temp_outputs;
    std::map<int64_t, bool> frames_tracked;  // frame -> tracked in reverse
  };

  size_t object_index(int64_t obj_id);  // the official _obj_id_to_idx: a new id gets the next slot
  void check_frame(int64_t frame_idx) const;
  const FrameFeatures& frame_features(int64_t frame_idx);
  FrameOutput run_single_frame_inference(size_t obj_idx, int64_t frame_idx, bool is_init_cond_frame,
                                         const FramePrompt& prompt, bool reverse, bool run_mem_encoder,
                                         const Tensor& prev_mask_logits = {});
  // add_new_points_or_box / add_new_mask after their inputs are stored.
  VideoFrameMasks predict_prompted_frame(size_t obj_idx, int64_t frame_idx, const FramePrompt& prompt);
  // Whether any object has a temporary conditioning output on the frame.
  bool has_temporary_cond_output(int64_t frame_idx) const;
  // _consolidate_temp_output_across_obj at the video's resolution, then _get_orig_video_res_output.
  VideoFrameMasks consolidated_masks(int64_t frame_idx, bool is_cond);
  // Low-res logits [objects, 1, L, L] -> the video's size (and non_overlap_masks).
  Tensor video_res_masks(const std::vector<const Tensor*>& low_res);
  void propagate_preflight();
  VideoFrameMasks propagate_frame(int64_t frame_idx, bool reverse);
  void drop_unreachable_outputs(int64_t frame_idx);

  std::shared_ptr<const Sam2Model> model_;
  VideoFrames frames_;
  TrackingConfig tracking_;
  VideoPredictorOptions options_;
  VideoTracker tracker_;
  std::vector<int64_t> obj_ids_;
  std::vector<ObjectState> objects_;
  // The most recent frame's features (the official cache holds one).
  std::optional<std::pair<int64_t, FrameFeatures>> cached_features_;
};

}  // namespace sam2rt
