#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "api/sam2rt_c.h"
#include "api/sam2rt_c_internal.h"
#include "api/video_input.h"
#include "api/video_predictor.h"
#include "core/error.h"

struct sam2rt_video {
  sam2rt::VideoPredictor predictor;
};

using sam2rt::c_api::guarded;

namespace {

sam2rt::VideoPredictor& predictor_of(sam2rt_video* video) {
  if (!video) throw sam2rt::Error("video is NULL");
  return video->predictor;
}

// The C view of a frame's masks, pointing into `masks` (valid while it lives).
sam2rt_video_masks borrowed_view(sam2rt::VideoFrameMasks& masks, int width, int height) {
  sam2rt_video_masks view{};
  view.frame_idx = masks.frame_idx;
  view.num_objects = static_cast<int32_t>(masks.obj_ids.size());
  view.width = width;
  view.height = height;
  view.obj_ids = masks.obj_ids.data();
  view.logits = masks.video_res_masks.data();
  return view;
}

// *out as a copy the caller owns (sam2rt_video_masks_free releases it).
void give_masks(const sam2rt::VideoPredictor& predictor, sam2rt::VideoFrameMasks masks, sam2rt_video_masks* out) {
  const size_t id_bytes = masks.obj_ids.size() * sizeof(int64_t);
  const size_t logit_bytes = static_cast<size_t>(masks.video_res_masks.numel()) * sizeof(float);
  // malloc(0) may return NULL: one byte more keeps NULL meaning failure.
  std::unique_ptr<void, decltype(&std::free)> ids(std::malloc(id_bytes + 1), &std::free);
  std::unique_ptr<void, decltype(&std::free)> logits(std::malloc(logit_bytes + 1), &std::free);
  if (!ids || !logits) throw std::bad_alloc();
  if (id_bytes > 0) std::memcpy(ids.get(), masks.obj_ids.data(), id_bytes);
  if (logit_bytes > 0) std::memcpy(logits.get(), masks.video_res_masks.data(), logit_bytes);
  *out = borrowed_view(masks, predictor.video_width(), predictor.video_height());
  out->obj_ids = static_cast<int64_t*>(ids.release());
  out->logits = static_cast<float*>(logits.release());
}

std::optional<int64_t> unless_negative(int64_t value) {
  return value < 0 ? std::nullopt : std::optional<int64_t>(value);
}

}  // namespace

extern "C" {

sam2rt_video* sam2rt_video_new(const sam2rt_model* model, const char* video_path) {
  return guarded(
      [&]() -> sam2rt_video* {
        if (!model || !video_path) throw sam2rt::Error("model or video_path is NULL");
        return new sam2rt_video{sam2rt::VideoPredictor(
            model->model, sam2rt::video_frames_from_path(video_path, model->model->config().image_size))};
      },
      nullptr);
}

void sam2rt_video_free(sam2rt_video* video) { delete video; }

int sam2rt_video_info(const sam2rt_video* video, int64_t* num_frames, int32_t* width, int32_t* height) {
  return guarded(
      [&] {
        if (!video) throw sam2rt::Error("video is NULL");
        if (num_frames) *num_frames = video->predictor.num_frames();
        if (width) *width = video->predictor.video_width();
        if (height) *height = video->predictor.video_height();
        return 0;
      },
      1);
}

int sam2rt_video_obj_ids(const sam2rt_video* video, int64_t* obj_ids, int32_t capacity, int32_t* count) {
  return guarded(
      [&] {
        if (!video || !count) throw sam2rt::Error("video or count is NULL");
        if (capacity < 0 || (capacity > 0 && !obj_ids)) throw sam2rt::Error("obj_ids must hold capacity entries");
        const std::vector<int64_t>& ids = video->predictor.obj_ids();
        const size_t written = std::min(ids.size(), static_cast<size_t>(capacity));
        std::copy_n(ids.begin(), written, obj_ids);
        *count = static_cast<int32_t>(ids.size());
        return 0;
      },
      1);
}

int sam2rt_video_add_points_or_box(sam2rt_video* video, int64_t frame_idx, int64_t obj_id, const float* points_xy,
                                   const int32_t* labels, int32_t num_points, const float* box,
                                   int32_t clear_old_points, int32_t normalize_coords, sam2rt_video_masks* out) {
  return guarded(
      [&] {
        sam2rt::VideoPredictor& predictor = predictor_of(video);
        if (!out) throw sam2rt::Error("out is NULL");
        if (num_points < 0 || (num_points > 0 && (!points_xy || !labels))) {
          throw sam2rt::Error("points_xy and labels must hold num_points entries");
        }
        std::vector<std::array<float, 2>> points;
        std::vector<int> point_labels;
        for (int32_t i = 0; i < num_points; ++i) {
          points.push_back({points_xy[2 * i], points_xy[2 * i + 1]});
          point_labels.push_back(labels[i]);
        }
        std::optional<std::array<float, 4>> box_xyxy;
        if (box) box_xyxy = std::array<float, 4>{box[0], box[1], box[2], box[3]};
        give_masks(predictor,
                   predictor.add_new_points_or_box(frame_idx, obj_id, points, point_labels, clear_old_points != 0,
                                                   normalize_coords != 0, box_xyxy),
                   out);
        return 0;
      },
      1);
}

int sam2rt_video_add_mask(sam2rt_video* video, int64_t frame_idx, int64_t obj_id, const uint8_t* mask, int32_t width,
                          int32_t height, sam2rt_video_masks* out) {
  return guarded(
      [&] {
        sam2rt::VideoPredictor& predictor = predictor_of(video);
        if (!out || !mask) throw sam2rt::Error("out or mask is NULL");
        if (width <= 0 || height <= 0 || static_cast<int64_t>(width) * height > sam2rt::kDefaultMaxImagePixels) {
          throw sam2rt::Error("mask size " + std::to_string(width) + "x" + std::to_string(height) +
                              " is empty or above the pixel limit");
        }
        sam2rt::Tensor mask_tensor({height, width});
        for (int64_t i = 0; i < mask_tensor.numel(); ++i) mask_tensor[i] = mask[i] != 0 ? 1.0f : 0.0f;
        give_masks(predictor, predictor.add_new_mask(frame_idx, obj_id, mask_tensor), out);
        return 0;
      },
      1);
}

int sam2rt_video_propagate(sam2rt_video* video, int64_t start_frame_idx, int64_t max_frame_num_to_track,
                           int32_t reverse, sam2rt_video_frame_callback on_frame, void* user_data) {
  return guarded(
      [&] {
        sam2rt::VideoPredictor& predictor = predictor_of(video);
        if (!on_frame) throw sam2rt::Error("on_frame is NULL");
        sam2rt::VideoPredictor::Propagation propagation = predictor.propagate_in_video(
            unless_negative(start_frame_idx), unless_negative(max_frame_num_to_track), reverse != 0);
        while (std::optional<sam2rt::VideoFrameMasks> masks = propagation.next()) {
          const sam2rt_video_masks view = borrowed_view(*masks, predictor.video_width(), predictor.video_height());
          if (on_frame(&view, user_data) != 0) break;
        }
        return 0;
      },
      1);
}

int sam2rt_video_clear_prompts_in_frame(sam2rt_video* video, int64_t frame_idx, int64_t obj_id,
                                        sam2rt_video_masks* out) {
  return guarded(
      [&] {
        sam2rt::VideoPredictor& predictor = predictor_of(video);
        sam2rt::VideoFrameMasks masks = predictor.clear_all_prompts_in_frame(frame_idx, obj_id);
        if (out) give_masks(predictor, std::move(masks), out);
        return 0;
      },
      1);
}

int sam2rt_video_remove_object(sam2rt_video* video, int64_t obj_id, int32_t strict) {
  return guarded(
      [&] {
        predictor_of(video).remove_object(obj_id, strict != 0, false);
        return 0;
      },
      1);
}

int sam2rt_video_reset(sam2rt_video* video) {
  return guarded(
      [&] {
        predictor_of(video).reset_state();
        return 0;
      },
      1);
}

void sam2rt_video_masks_free(sam2rt_video_masks* masks) {
  if (!masks) return;
  std::free(masks->obj_ids);
  std::free(masks->logits);
  masks->obj_ids = nullptr;
  masks->logits = nullptr;
}

}  // extern "C"
