#pragma once

#include <chrono>
#include <cstdint>

namespace sam2rt::cli {

// `track`'s progress on stderr: frames done of the total (unknown for a
// stream), frames per second and the time left. On a terminal one line
// redrawn in place; otherwise, for logs, a line per tenth of the video (every
// 100 frames of a stream).
class TrackProgress {
 public:
  // total: the frames this run will track, or -1 when unknown.
  explicit TrackProgress(int64_t total);
  // Ends a line that is still open, so that an error starts on a line of its own.
  ~TrackProgress();
  TrackProgress(const TrackProgress&) = delete;
  TrackProgress& operator=(const TrackProgress&) = delete;

  void frame_done();
  void finish();
  int64_t frames_done() const { return done_; }
  double frames_per_second() const;

 private:
  void draw();

  int64_t total_;
  int64_t done_ = 0;
  bool terminal_;
  bool line_open_ = false;
  int64_t last_step_ = 0;  // the tenth (or hundred frames) last reported in plain mode
  std::chrono::steady_clock::time_point start_;
};

}  // namespace sam2rt::cli
