#include "api/video_predictor.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "core/error.h"
#include "kernels/antialias_resize.h"
#include "kernels/bilinear_resize.h"
#include "kernels/stage_profile.h"
#include "model/mask_postprocess.h"

namespace sam2rt {

namespace {

std::string ids_to_string(const std::vector<int64_t>& ids) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? ", " : "") + std::to_string(ids[i]);
  return s + "]";
}

// The earlier logits a correction click refines, clamped as the official code does.
Tensor clamp_logits(const Tensor& logits) {
  Tensor y = logits.clone();
  for (int64_t i = 0; i < y.numel(); ++i) y[i] = std::clamp(y[i], -32.0f, 32.0f);
  return y;
}

}  // namespace

VideoPredictor::VideoPredictor(std::shared_ptr<const Sam2Model> model, VideoFrames frames,
                               VideoPredictorOptions options)
    : model_(std::move(model)),
      frames_(std::move(frames)),
      tracking_(options.tracking.value_or(tracking_config(model_->config()))),
      options_(options),
      tracker_(model_->config(), tracking_, model_->weights(), model_->heads(), model_->backend()) {
  if (frames_.num_frames <= 0) throw Error("the video has no frames");
  if (frames_.width <= 0 || frames_.height <= 0) throw Error("the video's frame size is unknown");
  if (!frames_.load) throw Error("the video has no frame reader");
  if (tracking_.clear_non_cond_mem_around_input) {
    throw Error("clear_non_cond_mem_around_input is not supported (the official SAM2VideoPredictor of this version "
                "fails with it too)");
  }
  // init_state computes frame 0's features up front.
  frame_features(0);
}

size_t VideoPredictor::object_index(int64_t obj_id) {
  const auto it = std::find(obj_ids_.begin(), obj_ids_.end(), obj_id);
  if (it != obj_ids_.end()) return static_cast<size_t>(it - obj_ids_.begin());
  obj_ids_.push_back(obj_id);
  objects_.emplace_back();
  return objects_.size() - 1;
}

void VideoPredictor::check_frame(int64_t frame_idx) const {
  if (frame_idx < 0 || frame_idx >= frames_.num_frames) {
    throw Error("frame index " + std::to_string(frame_idx) + " is outside the video's " +
                std::to_string(frames_.num_frames) + " frames (0.." + std::to_string(frames_.num_frames - 1) + ")");
  }
}

const FrameFeatures& VideoPredictor::frame_features(int64_t frame_idx) {
  if (cached_features_ && cached_features_->first == frame_idx) return cached_features_->second;
  cached_features_.reset();
  Tensor image;
  {
    ScopedStage stage("video: frame read + preprocess");
    image = frames_.load(frame_idx);
  }
  const EncoderOutputs encoded = model_->encoder().encode(image, frame_encode_options());
  cached_features_.emplace(frame_idx, tracker_.frame_features(encoded));
  return cached_features_->second;
}

FrameOutput VideoPredictor::run_single_frame_inference(size_t obj_idx, int64_t frame_idx, bool is_init_cond_frame,
                                                        const FramePrompt& prompt, bool reverse, bool run_mem_encoder,
                                                        const Tensor& prev_mask_logits) {
  const FrameFeatures& features = frame_features(frame_idx);
  const TrackStepOutput step = tracker_.track_step(features, frame_idx, is_init_cond_frame, prompt,
                                                   objects_[obj_idx].outputs, frames_.num_frames, reverse,
                                                   prev_mask_logits);
  FrameOutput out;
  if (run_mem_encoder) {
    out.maskmem_features =
        tracker_.encode_memory(features, step.high_res_masks, step.object_score_logit, prompt.has_points());
  }
  out.pred_masks = step.low_res_masks;
  if (tracking_.fill_hole_area > 0) fill_holes_in_mask_scores(out.pred_masks, tracking_.fill_hole_area);
  out.obj_ptr = step.obj_ptr;
  out.object_score_logit = step.object_score_logit;
  return out;
}

VideoFrameMasks VideoPredictor::add_new_points_or_box(int64_t frame_idx, int64_t obj_id,
                                                      const std::vector<std::array<float, 2>>& points,
                                                      const std::vector<int>& labels, bool clear_old_points,
                                                      bool normalize_coords,
                                                      const std::optional<std::array<float, 4>>& box) {
  check_frame(frame_idx);
  if (points.size() != labels.size()) {
    throw Error("points and labels must be provided together (" + std::to_string(points.size()) + " points, " +
                std::to_string(labels.size()) + " labels)");
  }
  if (points.empty() && !box) throw Error("at least one of points or box must be provided as input");
  if (box && !clear_old_points) {
    throw Error("cannot add box without clearing old points, since box prompt must be provided before any point "
                "prompt (please use clear_old_points=True instead)");
  }
  for (const int label : labels) {
    if (label < -1 || label > 3) throw Error("point label " + std::to_string(label) + " is not -1, 0, 1, 2 or 3");
  }
  // The model frame: divided by the video's size (normalize_coords), then
  // scaled by the model's input size, in float32 as the official code does.
  const float s = static_cast<float>(model_->config().image_size);
  auto to_model = [&](float v, int size) {
    if (!std::isfinite(v)) throw Error("a point or box coordinate is not a finite number");
    const float normalized = normalize_coords ? v / static_cast<float>(size) : v;
    return normalized * s;
  };
  std::vector<PromptEncoder::ModelPoint> new_points;
  if (box) {
    new_points.push_back({to_model((*box)[0], frames_.width), to_model((*box)[1], frames_.height), 2});
    new_points.push_back({to_model((*box)[2], frames_.width), to_model((*box)[3], frames_.height), 3});
  }
  for (size_t i = 0; i < points.size(); ++i) {
    new_points.push_back({to_model(points[i][0], frames_.width), to_model(points[i][1], frames_.height), labels[i]});
  }
  const size_t obj_idx = object_index(obj_id);
  ObjectState& object = objects_[obj_idx];
  std::vector<PromptEncoder::ModelPoint> point_inputs;
  if (!clear_old_points) {
    const auto it = object.point_inputs.find(frame_idx);
    if (it != object.point_inputs.end()) point_inputs = it->second;
  }
  point_inputs.insert(point_inputs.end(), new_points.begin(), new_points.end());
  object.point_inputs[frame_idx] = point_inputs;
  object.mask_inputs.erase(frame_idx);
  FramePrompt prompt;
  prompt.points = std::move(point_inputs);
  return predict_prompted_frame(obj_idx, frame_idx, prompt);
}

VideoFrameMasks VideoPredictor::add_new_mask(int64_t frame_idx, int64_t obj_id, const Tensor& mask) {
  check_frame(frame_idx);
  if (mask.rank() != 2) throw Error("a mask prompt must be 2-D [H, W], got shape " + shape_to_string(mask.shape()));
  const int64_t s = model_->config().image_size, h = mask.dim(0), w = mask.dim(1);
  if (h <= 0 || w <= 0) throw Error("a mask prompt is empty");
  Tensor binary({1, 1, h, w});
  for (int64_t i = 0; i < mask.numel(); ++i) {
    if (!std::isfinite(mask[i])) throw Error("a mask prompt holds a value that is not a finite number");
    binary[i] = mask[i] != 0.0f ? 1.0f : 0.0f;
  }
  Tensor inputs({1, s, s});
  if (h != s || w != s) {
    // Antialiased bilinear to the model's size, then >= 0.5.
    resize_bilinear_antialias(binary.data(), 1, static_cast<int>(w), static_cast<int>(h), inputs.data(),
                              static_cast<int>(s), static_cast<int>(s));
    for (int64_t i = 0; i < inputs.numel(); ++i) inputs[i] = inputs[i] >= 0.5f ? 1.0f : 0.0f;
  } else {
    std::copy_n(binary.data(), binary.numel(), inputs.data());
  }
  const size_t obj_idx = object_index(obj_id);
  ObjectState& object = objects_[obj_idx];
  object.mask_inputs[frame_idx] = inputs;
  object.point_inputs.erase(frame_idx);
  FramePrompt prompt;
  prompt.mask = inputs;
  return predict_prompted_frame(obj_idx, frame_idx, prompt);
}

VideoFrameMasks VideoPredictor::predict_prompted_frame(size_t obj_idx, int64_t frame_idx, const FramePrompt& prompt) {
  ObjectState& object = objects_[obj_idx];
  // A frame not tracked yet is an initial conditioning frame (segmented
  // without memory, as SAM does an image); a tracked one is corrected.
  const auto tracked = object.frames_tracked.find(frame_idx);
  const bool is_init_cond_frame = tracked == object.frames_tracked.end();
  const bool reverse = is_init_cond_frame ? false : tracked->second;
  const bool is_cond = is_init_cond_frame || tracking_.add_all_frames_to_correct_as_cond;
  auto& temp = is_cond ? object.temp_outputs.cond : object.temp_outputs.non_cond;

  // Points refine the frame's latest mask, if any (the temporary output
  // first, then the kept ones).
  Tensor prev_mask_logits;
  if (prompt.has_points()) {
    const FrameOutput* prev = nullptr;
    if (auto it = temp.find(frame_idx); it != temp.end()) prev = &it->second;
    if (prev == nullptr) {
      if (auto it = object.outputs.cond.find(frame_idx); it != object.outputs.cond.end()) prev = &it->second;
    }
    if (prev == nullptr) {
      if (auto it = object.outputs.non_cond.find(frame_idx); it != object.outputs.non_cond.end()) prev = &it->second;
    }
    if (prev != nullptr && !prev->pred_masks.empty()) prev_mask_logits = clamp_logits(prev->pred_masks);
  }
  // The memory encoder waits for the propagation's preflight (after every
  // object's prompts are in).
  temp[frame_idx] = run_single_frame_inference(obj_idx, frame_idx, is_init_cond_frame, prompt, reverse, false,
                                               prev_mask_logits);
  return consolidated_masks(frame_idx, is_cond);
}

VideoFrameMasks VideoPredictor::consolidated_masks(int64_t frame_idx, bool is_cond) {
  std::vector<const Tensor*> low_res(objects_.size(), nullptr);
  for (size_t i = 0; i < objects_.size(); ++i) {
    const ObjectState& object = objects_[i];
    const auto& temp = is_cond ? object.temp_outputs.cond : object.temp_outputs.non_cond;
    const FrameOutput* out = nullptr;
    if (auto it = temp.find(frame_idx); it != temp.end()) out = &it->second;
    if (out == nullptr) {
      if (auto it = object.outputs.cond.find(frame_idx); it != object.outputs.cond.end()) out = &it->second;
    }
    if (out == nullptr) {
      if (auto it = object.outputs.non_cond.find(frame_idx); it != object.outputs.non_cond.end()) out = &it->second;
    }
    if (out != nullptr) low_res[i] = &out->pred_masks;
  }
  return {frame_idx, obj_ids_, video_res_masks(low_res)};
}

Tensor VideoPredictor::video_res_masks(const std::vector<const Tensor*>& low_res) {
  ScopedStage stage("video: masks to the video's size");
  const int64_t h = frames_.height, w = frames_.width, n = static_cast<int64_t>(low_res.size());
  Tensor masks({n, 1, h, w});
  for (int64_t i = 0; i < n; ++i) {
    float* dst = masks.data() + i * h * w;
    if (low_res[static_cast<size_t>(i)] == nullptr) {
      // An object without output on this frame: the NO_OBJ_SCORE placeholder.
      std::fill(dst, dst + h * w, kNoObjectScore);
      continue;
    }
    const Tensor resized = bilinear_resize(*low_res[static_cast<size_t>(i)], h, w);
    std::copy_n(resized.data(), h * w, dst);
  }
  if (tracking_.non_overlap_masks && n > 1) {
    // Only the highest-scoring object keeps each pixel; the others' scores
    // drop to at most -10.
    for (int64_t p = 0; p < h * w; ++p) {
      int64_t best = 0;
      for (int64_t i = 1; i < n; ++i) {
        if (masks[i * h * w + p] > masks[best * h * w + p]) best = i;
      }
      for (int64_t i = 0; i < n; ++i) {
        if (i != best) masks[i * h * w + p] = std::min(masks[i * h * w + p], -10.0f);
      }
    }
  }
  return masks;
}

void VideoPredictor::propagate_preflight() {
  if (objects_.empty()) throw Error("No input points or masks are provided for any object; please add inputs first.");
  const int64_t s = model_->config().image_size;
  for (size_t i = 0; i < objects_.size(); ++i) {
    ObjectState& object = objects_[i];
    for (const bool is_cond : {false, true}) {
      auto& temp = is_cond ? object.temp_outputs.cond : object.temp_outputs.non_cond;
      auto& kept = is_cond ? object.outputs.cond : object.outputs.non_cond;
      for (auto& [frame_idx, out] : temp) {
        if (out.maskmem_features.empty()) {
          // The memory of an interacted frame: its (hole-filled) mask at the
          // model's size, binarized.
          const Tensor high_res = bilinear_resize(out.pred_masks, s, s);
          out.maskmem_features = tracker_.encode_memory(frame_features(frame_idx), high_res, out.object_score_logit,
                                                        true);
        }
        kept[frame_idx] = std::move(out);
      }
      temp.clear();
    }
    if (object.outputs.cond.empty()) {
      throw Error("No input points or masks are provided for object id " + std::to_string(obj_ids_[i]) +
                  "; please add inputs first.");
    }
    for (const auto& [frame_idx, out] : object.outputs.cond) object.outputs.non_cond.erase(frame_idx);
  }
}

VideoPredictor::Propagation VideoPredictor::propagate_in_video(std::optional<int64_t> start_frame_idx,
                                                               std::optional<int64_t> max_frame_num_to_track,
                                                               bool reverse) {
  propagate_preflight();
  int64_t start;
  if (start_frame_idx) {
    check_frame(*start_frame_idx);
    start = *start_frame_idx;
  } else {
    // The earliest prompted frame of any object.
    start = frames_.num_frames;
    for (const ObjectState& object : objects_) start = std::min(start, object.outputs.cond.begin()->first);
  }
  const int64_t max_frames = max_frame_num_to_track.value_or(frames_.num_frames);
  if (max_frames < 0) throw Error("max_frame_num_to_track must not be negative");
  std::vector<int64_t> order;
  if (reverse) {
    const int64_t end = std::max<int64_t>(start - max_frames, 0);
    if (start > 0) {
      for (int64_t t = start; t >= end; --t) order.push_back(t);
    }
  } else {
    const int64_t end = std::min(start + max_frames, frames_.num_frames - 1);
    for (int64_t t = start; t <= end; ++t) order.push_back(t);
  }
  return Propagation(*this, std::move(order), reverse);
}

std::optional<VideoFrameMasks> VideoPredictor::Propagation::next() {
  if (position_ >= order_.size()) return std::nullopt;
  return predictor_->propagate_frame(order_[position_++], reverse_);
}

VideoFrameMasks VideoPredictor::propagate_frame(int64_t frame_idx, bool reverse) {
  std::vector<const Tensor*> low_res(objects_.size(), nullptr);
  for (size_t i = 0; i < objects_.size(); ++i) {
    ObjectState& object = objects_[i];
    // A prompted frame keeps its output; the others are tracked.
    if (auto it = object.outputs.cond.find(frame_idx); it != object.outputs.cond.end()) {
      low_res[i] = &it->second.pred_masks;
    } else {
      FrameOutput out = run_single_frame_inference(i, frame_idx, false, FramePrompt{}, reverse, true);
      FrameOutput& kept = object.outputs.non_cond[frame_idx] = std::move(out);
      low_res[i] = &kept.pred_masks;
    }
    object.frames_tracked[frame_idx] = reverse;
  }
  VideoFrameMasks masks{frame_idx, obj_ids_, video_res_masks(low_res)};
  if (!options_.keep_all_outputs) drop_unreachable_outputs(frame_idx);
  return masks;
}

void VideoPredictor::drop_unreachable_outputs(int64_t frame_idx) {
  // A tracked frame's output is read as a memory by the next num_maskmem - 1
  // strides of frames and as a pointer by the next max_obj_ptrs_in_encoder - 1:
  // outside that window of the current frame and of every prompted frame
  // (where a later propagation may start), no tracking reads it again.
  const int64_t window = std::max<int64_t>(int64_t{tracking_.num_maskmem} * tracking_.memory_temporal_stride_for_eval,
                                           tracking_.max_obj_ptrs_in_encoder);
  for (ObjectState& object : objects_) {
    for (auto it = object.outputs.non_cond.begin(); it != object.outputs.non_cond.end();) {
      bool reachable = std::llabs(it->first - frame_idx) <= window;
      for (const auto& [cond_frame, out] : object.outputs.cond) {
        reachable = reachable || std::llabs(it->first - cond_frame) <= window;
      }
      it = reachable ? std::next(it) : object.outputs.non_cond.erase(it);
    }
  }
}

VideoFrameMasks VideoPredictor::clear_all_prompts_in_frame(int64_t frame_idx, int64_t obj_id) {
  check_frame(frame_idx);
  const size_t obj_idx = object_index(obj_id);
  ObjectState& object = objects_[obj_idx];
  object.point_inputs.erase(frame_idx);
  object.mask_inputs.erase(frame_idx);
  object.temp_outputs.cond.erase(frame_idx);
  object.temp_outputs.non_cond.erase(frame_idx);
  // The frame is no longer a conditioning frame: its output, if any, becomes a tracked frame's.
  if (auto it = object.outputs.cond.find(frame_idx); it != object.outputs.cond.end()) {
    object.outputs.non_cond[frame_idx] = std::move(it->second);
    object.outputs.cond.erase(it);
    object.frames_tracked.erase(frame_idx);
  }
  return consolidated_masks(frame_idx, has_temporary_cond_output(frame_idx));
}

bool VideoPredictor::has_temporary_cond_output(int64_t frame_idx) const {
  return std::any_of(objects_.begin(), objects_.end(),
                     [frame_idx](const ObjectState& o) { return o.temp_outputs.cond.count(frame_idx) != 0; });
}

void VideoPredictor::reset_state() {
  obj_ids_.clear();
  objects_.clear();
}

std::pair<std::vector<int64_t>, std::vector<VideoFrameMasks>> VideoPredictor::remove_object(int64_t obj_id,
                                                                                          bool strict,
                                                                                          bool need_output) {
  const auto it = std::find(obj_ids_.begin(), obj_ids_.end(), obj_id);
  if (it == obj_ids_.end()) {
    if (!strict) return {obj_ids_, {}};
    throw Error("Cannot remove object id " + std::to_string(obj_id) +
                " as it doesn't exist. All existing object ids: " + ids_to_string(obj_ids_) + ".");
  }
  if (obj_ids_.size() == 1) {
    reset_state();
    return {obj_ids_, {}};
  }
  const size_t obj_idx = static_cast<size_t>(it - obj_ids_.begin());
  std::vector<int64_t> input_frames;
  for (const auto& [frame, points] : objects_[obj_idx].point_inputs) input_frames.push_back(frame);
  for (const auto& [frame, mask] : objects_[obj_idx].mask_inputs) input_frames.push_back(frame);
  std::sort(input_frames.begin(), input_frames.end());
  input_frames.erase(std::unique(input_frames.begin(), input_frames.end()), input_frames.end());
  // The official code first clears the object's prompts frame by frame; each
  // object's state here is its own, so dropping the object does it.
  obj_ids_.erase(it);
  objects_.erase(objects_.begin() + static_cast<std::ptrdiff_t>(obj_idx));
  std::vector<VideoFrameMasks> updated;
  if (need_output) {
    for (const int64_t frame : input_frames) {
      updated.push_back(consolidated_masks(frame, has_temporary_cond_output(frame)));
    }
  }
  return {obj_ids_, std::move(updated)};
}

const FrameOutput* VideoPredictor::output(int64_t obj_id, int64_t frame_idx) const {
  const auto it = std::find(obj_ids_.begin(), obj_ids_.end(), obj_id);
  if (it == obj_ids_.end()) return nullptr;
  const ObjectState& object = objects_[static_cast<size_t>(it - obj_ids_.begin())];
  for (const auto* outputs : {&object.temp_outputs.cond, &object.temp_outputs.non_cond, &object.outputs.cond,
                              &object.outputs.non_cond}) {
    if (auto found = outputs->find(frame_idx); found != outputs->end()) return &found->second;
  }
  return nullptr;
}

int64_t VideoPredictor::outputs_held() const {
  int64_t n = 0;
  for (const ObjectState& o : objects_) {
    n += static_cast<int64_t>(o.outputs.cond.size() + o.outputs.non_cond.size() + o.temp_outputs.cond.size() +
                              o.temp_outputs.non_cond.size());
  }
  return n;
}

}  // namespace sam2rt
