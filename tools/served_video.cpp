#include "served_video.h"

#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "api/binary_mask.h"
#include "api/video_input.h"
#include "core/error.h"
#include "http_error.h"
#include "io/base64.h"
#include "io/png_writer.h"
#include "io/video_frames.h"
#include "model_options.h"
#include "video_frame_rate.h"

namespace sam2rt::cli {

namespace {

using nlohmann::json;

HttpError unknown_object(int64_t obj_id, const std::vector<int64_t>& known) {
  std::string ids;
  for (const int64_t id : known) ids += (ids.empty() ? "" : ", ") + std::to_string(id);
  return HttpError(404, "unknown object id " + std::to_string(obj_id) + " (this video's objects: " +
                            (ids.empty() ? "none" : ids) + ")");
}

}  // namespace

json frame_masks_json(const FrameMasks& masks, MaskFormat format) {
  json objects = json::array();
  for (const ObjectMask& object : masks.objects) {
    json entry = {{"obj_id", object.obj_id},
                  {"area", object.area},
                  {"bbox", object.bbox},
                  {"object_score_logit", object.object_score_logit ? json(*object.object_score_logit) : json()}};
    const UncompressedRle& rle = object.rle;
    if (format == MaskFormat::png) {
      const std::vector<uint8_t> mask = decode_rle(rle);
      std::vector<uint8_t> gray(mask.size());
      std::transform(mask.begin(), mask.end(), gray.begin(), [](uint8_t on) { return on ? 255 : 0; });
      entry["png_base64"] = base64_encode(
          encode_png_gray8(gray.data(), static_cast<int>(rle.width), static_cast<int>(rle.height)));
    } else if (format == MaskFormat::rle) {
      entry["rle"] = {{"size", {rle.height, rle.width}}, {"counts", rle.counts}};
    } else {
      entry["rle"] = {{"size", {rle.height, rle.width}}, {"counts", coco_rle_string(rle)}};
    }
    objects.push_back(std::move(entry));
  }
  return {{"frame", masks.frame}, {"objects", std::move(objects)}};
}

json progress_json(const PropagationProgress& progress) {
  json body = {{"state", progress.state},
               {"frames_done", progress.frames_done},
               {"frames_total", progress.frames_total},
               {"reverse", progress.reverse},
               {"elapsed_ms", progress.elapsed_ms}};
  if (!progress.error.empty()) body["error"] = progress.error;
  return body;
}

ServedVideo::FileRemover::~FileRemover() {
  std::error_code ignored;
  std::filesystem::remove(path, ignored);
}

ServedVideo::ServedVideo(std::string path, std::shared_ptr<const Sam2Model> model, EncodeGate& gate,
                         const Settings& settings)
    : path_(std::move(path)), settings_(settings), gate_(gate) {
  display_ = open_video_frames(path_, settings_.max_pixels);
  const int64_t counted = display_->frame_count();
  int64_t decoded = 0;
  while (display_->next()) ++decoded;
  if (counted < 0 || decoded != counted) {
    throw Error("the uploaded video holds " + std::to_string(decoded) + " readable frames, its container " +
                std::to_string(counted));
  }
  if (decoded == 0) throw Error("the uploaded video has no frames");
  bounds_ = VideoBounds{decoded, display_->width(), display_->height()};
  fps_ = video_frame_rate(path_);
  const auto slot = gate_.enter();
  predictor_ = std::make_unique<VideoPredictor>(
      model, video_frames_from_path(path_, model->config().image_size),
      VideoPredictorOptions{.tracking = std::nullopt, .keep_all_outputs = false});
}

ServedVideo::~ServedVideo() { stop_propagation(); }

RgbImage ServedVideo::frame_image(int64_t index) {
  std::lock_guard lock(display_mutex_);
  return display_->frame(index);
}

// Called before taking the predictor's lock, so as not to wait behind a propagation's
// frames for it, and again under it: a propagation may have started meanwhile.
void ServedVideo::refuse_while_propagating() const {
  if (propagating_) {
    throw HttpError(409, "this video is being propagated: wait until GET .../propagate says done, or cancel it "
                         "(DELETE .../propagate)");
  }
}

// Thresholds a predictor's answer at logit 0 and keeps it as the frame's masks.
FrameMasks ServedVideo::keep(const VideoFrameMasks& result) {
  FrameMasks kept{result.frame_idx, {}};
  const int64_t objects = static_cast<int64_t>(result.obj_ids.size());
  const Tensor planes = result.video_res_masks.reshaped({objects, bounds_.height, bounds_.width});
  for (int64_t i = 0; i < objects; ++i) {
    const int64_t obj_id = result.obj_ids[static_cast<size_t>(i)];
    const std::vector<uint8_t> mask = threshold_mask(planes, i, 0.0f);
    const MaskExtent extent = mask_extent(mask, bounds_.width, bounds_.height);
    const FrameOutput* output = predictor_->output(obj_id, result.frame_idx);
    kept.objects.push_back({obj_id, encode_rle(mask.data(), bounds_.height, bounds_.width), extent.area, extent.bbox,
                            output ? std::optional<float>(output->object_score_logit) : std::nullopt});
  }
  std::lock_guard lock(results_mutex_);
  masks_[kept.frame] = kept;
  obj_ids_ = predictor_->obj_ids();
  return kept;
}

FrameMasks ServedVideo::add_prompt(const VideoPromptRequest& request) {
  refuse_while_propagating();
  std::lock_guard lock(predictor_mutex_);
  refuse_while_propagating();
  std::vector<std::array<float, 2>> points;
  std::vector<int> labels;
  for (const PointPrompt& p : request.prompt.points) {
    points.push_back({p.x, p.y});
    labels.push_back(p.label);
  }
  // A frame other than the cached one is encoded first.
  const auto slot = gate_.enter();
  const VideoFrameMasks result = predictor_->add_new_points_or_box(request.frame, request.obj_id, points, labels,
                                                                   /*clear_old_points=*/true,
                                                                   /*normalize_coords=*/true, request.prompt.box);
  prompted_[request.obj_id].insert(request.frame);
  return keep(result);
}

FrameMasks ServedVideo::clear_prompts(const ObjectOnFrame& request) {
  refuse_while_propagating();
  std::lock_guard lock(predictor_mutex_);
  refuse_while_propagating();
  const std::vector<int64_t>& known = predictor_->obj_ids();
  if (std::find(known.begin(), known.end(), request.obj_id) == known.end()) {
    throw unknown_object(request.obj_id, known);
  }
  const auto slot = gate_.enter();
  const VideoFrameMasks result = predictor_->clear_all_prompts_in_frame(request.frame, request.obj_id);
  prompted_[request.obj_id].erase(request.frame);
  return keep(result);
}

std::vector<int64_t> ServedVideo::remove_object(int64_t obj_id) {
  refuse_while_propagating();
  std::lock_guard lock(predictor_mutex_);
  refuse_while_propagating();
  const std::vector<int64_t> known = predictor_->obj_ids();
  if (std::find(known.begin(), known.end(), obj_id) == known.end()) throw unknown_object(obj_id, known);
  const auto slot = gate_.enter();
  const auto [remaining, updated] = predictor_->remove_object(obj_id, /*strict=*/true);
  prompted_.erase(obj_id);
  {
    // Its masks leave every frame; the frames it was prompted on get the others' masks anew below.
    std::lock_guard results(results_mutex_);
    for (auto& [frame, masks] : masks_) {
      std::erase_if(masks.objects, [obj_id](const ObjectMask& object) { return object.obj_id == obj_id; });
    }
    obj_ids_ = remaining;
  }
  for (const VideoFrameMasks& frame : updated) keep(frame);
  return remaining;
}

void ServedVideo::reset() {
  std::lock_guard control(control_mutex_);
  stop_propagation();
  std::lock_guard lock(predictor_mutex_);
  predictor_->reset_state();
  prompted_.clear();
  std::lock_guard results(results_mutex_);
  masks_.clear();
  obj_ids_.clear();
  progress_ = PropagationProgress{};
}

PropagationProgress ServedVideo::start_propagation(const PropagateRequest& request) {
  refuse_while_propagating();
  std::lock_guard control(control_mutex_);
  std::unique_lock lock(predictor_mutex_);
  refuse_while_propagating();
  // The previous propagation has finished (propagating_ is false): its thread only returns.
  if (worker_.joinable()) worker_.join();
  std::vector<VideoPredictor::Propagation> passes;
  {
    // The preflight encodes the memories of prompted frames.
    const auto slot = gate_.enter();
    passes.push_back(predictor_->propagate_in_video(request.start_frame, request.max_frames, false));
    if (request.reverse) {
      int64_t latest = 0;
      for (const auto& [obj_id, frames] : prompted_) {
        if (!frames.empty()) latest = std::max(latest, *frames.rbegin());
      }
      passes.push_back(predictor_->propagate_in_video(request.start_frame.value_or(latest), request.max_frames, true));
    }
  }
  int64_t total = 0;
  for (const auto& pass : passes) total += pass.frames_total();
  propagating_ = true;
  cancel_ = false;
  PropagationProgress started{"running", 0, total, request.reverse, "", 0};
  {
    std::lock_guard results(results_mutex_);
    progress_ = started;
    started_ = std::chrono::steady_clock::now();
  }
  lock.unlock();
  worker_ = std::thread([this, passes = std::move(passes)]() mutable { propagate(std::move(passes)); });
  return started;
}

void ServedVideo::propagate(std::vector<VideoPredictor::Propagation> passes) {
  // OpenMP thread counts are per thread: this one does not inherit --threads.
  if (settings_.threads > 0) omp_set_num_threads(settings_.threads);
  std::string state = "done", error;
  try {
    for (auto& pass : passes) {
      for (bool more = true; more && state == "done";) {
        {
          std::lock_guard lock(predictor_mutex_);
          if (cancel_) {
            state = "cancelled";
            break;
          }
          const auto slot = gate_.enter_accepted();
          const std::optional<VideoFrameMasks> result = pass.next();
          more = result.has_value();
          if (!more) break;
          keep(*result);
        }
        std::lock_guard results(results_mutex_);
        ++progress_.frames_done;
        progress_.elapsed_ms = milliseconds_since(started_);
      }
    }
  } catch (const std::exception& e) {
    state = "failed";
    error = e.what();
    std::fprintf(stderr, "serve: propagation failed: %s\n", e.what());
  }
  std::lock_guard lock(predictor_mutex_);
  propagating_ = false;
  std::lock_guard results(results_mutex_);
  progress_.state = state;
  progress_.error = error;
  progress_.elapsed_ms = milliseconds_since(started_);
}

void ServedVideo::stop_propagation() {
  cancel_ = true;
  if (worker_.joinable()) worker_.join();
  cancel_ = false;
}

void ServedVideo::cancel_propagation() {
  std::lock_guard control(control_mutex_);
  stop_propagation();
}

PropagationProgress ServedVideo::progress() const {
  std::lock_guard lock(results_mutex_);
  return progress_;
}

std::optional<FrameMasks> ServedVideo::masks(int64_t frame) const {
  std::lock_guard lock(results_mutex_);
  const auto it = masks_.find(frame);
  if (it == masks_.end()) return std::nullopt;
  return it->second;
}

std::vector<int64_t> ServedVideo::obj_ids() const {
  std::lock_guard lock(results_mutex_);
  return obj_ids_;
}

int64_t ServedVideo::frames_with_masks() const {
  std::lock_guard lock(results_mutex_);
  return static_cast<int64_t>(masks_.size());
}

bool ServedVideo::propagating() const {
  std::lock_guard lock(results_mutex_);
  return progress_.state == "running";
}

}  // namespace sam2rt::cli
