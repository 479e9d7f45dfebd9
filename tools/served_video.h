#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "api/sam2_model.h"
#include "api/segment_request.h"
#include "api/video_predictor.h"
#include "encode_gate.h"
#include "io/image.h"
#include "io/mask_rle.h"
#include "io/video_frame_source.h"
#include "video_request.h"

namespace sam2rt::cli {

// One object's mask on one frame, thresholded (logit > 0, as `sam2rt track`
// writes it) at the video's size, as the server keeps it.
struct ObjectMask {
  int64_t obj_id = 0;
  UncompressedRle rle;
  int64_t area = 0;
  nlohmann::json bbox;  // [x0, y0, x1, y1) or null
  std::optional<float> object_score_logit;
};

// Every object's mask on one frame, from a prompt or from tracking.
struct FrameMasks {
  int64_t frame = 0;
  std::vector<ObjectMask> objects;
};

// {"frame", "objects": [{"obj_id", "area", "bbox", "object_score_logit", "png_base64" | "rle"}]}.
nlohmann::json frame_masks_json(const FrameMasks& masks, MaskFormat format);

// Where a propagation stands, for GET .../propagate.
struct PropagationProgress {
  std::string state = "idle";  // idle, running, done, failed, cancelled
  int64_t frames_done = 0;
  int64_t frames_total = 0;
  bool reverse = false;
  std::string error;  // why it failed
  double elapsed_ms = 0;
};
nlohmann::json progress_json(const PropagationProgress& progress);

// One uploaded video of `sam2rt serve`: its file (removed with it), a frame
// reader for display, a VideoPredictor (SAM2VideoPredictor) on its frames, the
// masks each frame got last (from a prompt or from tracking), and at most one
// propagation, which runs on a thread of its own while the masks it has made so
// far can be read. Thread-safe: prompts, clears, resets and propagations take
// turns on the predictor; a prompt, clear or object removal during a
// propagation is refused (HttpError 409).
class ServedVideo {
 public:
  struct Settings {
    int64_t max_pixels = kDefaultMaxImagePixels;
    int max_points = kMaxPoints;
    int threads = 0;  // --threads for the propagation thread (0: OpenMP's default)
  };

  // Decodes every frame once (a damaged or truncated file is an Error here, not
  // halfway through tracking), then encodes frame 0 as init_state does (within
  // an encode slot of `gate`). Takes ownership of the file at `path`: it is
  // removed when the video is, or when this throws.
  ServedVideo(std::string path, std::shared_ptr<const Sam2Model> model, EncodeGate& gate, const Settings& settings);
  ~ServedVideo();
  ServedVideo(const ServedVideo&) = delete;
  ServedVideo& operator=(const ServedVideo&) = delete;

  const VideoBounds& bounds() const { return bounds_; }
  std::optional<double> fps() const { return fps_; }
  const Settings& settings() const { return settings_; }

  // Frame `index` at the video's size, for display.
  RgbImage frame_image(int64_t index);

  // add_new_points_or_box with clear_old_points: every object's masks on the frame.
  FrameMasks add_prompt(const VideoPromptRequest& request);
  // clear_all_prompts_in_frame; HttpError 404 for an object that has no prompts.
  FrameMasks clear_prompts(const ObjectOnFrame& request);
  // remove_object; HttpError 404 for an unknown object. The remaining object ids.
  std::vector<int64_t> remove_object(int64_t obj_id);
  // reset_state: no objects, no masks (a running propagation is cancelled first).
  void reset();

  // Checks the request and the prompts (propagate_in_video's preflight: Error,
  // a 400, when there are none) and starts tracking on the propagation thread:
  // forward, then with `reverse` backward from the latest prompted frame (or
  // start_frame), as `sam2rt track --reverse`. HttpError 409 while one runs.
  PropagationProgress start_propagation(const PropagateRequest& request);
  // Stops a running propagation after the frame it is tracking; the frames
  // tracked so far keep their masks.
  void cancel_propagation();
  PropagationProgress progress() const;

  // The masks the frame got last; nullopt when it has none yet.
  std::optional<FrameMasks> masks(int64_t frame) const;
  std::vector<int64_t> obj_ids() const;
  // Frames that have masks.
  int64_t frames_with_masks() const;
  bool propagating() const;

 private:
  FrameMasks keep(const VideoFrameMasks& result);
  void refuse_while_propagating() const;
  void stop_propagation();
  void propagate(std::vector<VideoPredictor::Propagation> passes);

  const std::string path_;
  // Removes the file, also when the constructor throws: declared before the readers
  // of the file, so destroyed after them.
  struct FileRemover {
    const std::string& path;
    ~FileRemover();
  } remover_{path_};
  const Settings settings_;
  EncodeGate& gate_;
  VideoBounds bounds_;
  std::optional<double> fps_;

  std::mutex display_mutex_;
  std::unique_ptr<VideoFrameSource> display_;

  // Held for each use of the predictor (one frame at a time while propagating).
  std::mutex predictor_mutex_;
  std::unique_ptr<VideoPredictor> predictor_;
  // Set and cleared under predictor_mutex_; read without it too, so that a request
  // is refused at once instead of waiting for the lock between tracked frames.
  std::atomic<bool> propagating_{false};
  std::map<int64_t, std::set<int64_t>> prompted_;  // obj_id -> frames with prompts; predictor_mutex_

  // Starting, cancelling and joining the propagation thread.
  std::mutex control_mutex_;
  std::thread worker_;
  std::atomic<bool> cancel_{false};

  mutable std::mutex results_mutex_;
  std::map<int64_t, FrameMasks> masks_;
  std::vector<int64_t> obj_ids_;
  PropagationProgress progress_;
  std::chrono::steady_clock::time_point started_;
};

}  // namespace sam2rt::cli
