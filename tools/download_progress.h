#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace sam2rt::cli {

// The progress of a download on stderr: on a terminal a bar redrawn in place
// (bytes, percent, MB/s, time left); otherwise, for logs, a plain line at
// every tenth of the file (or every 100 MB while the size is unknown).
class DownloadProgress {
 public:
  explicit DownloadProgress(std::string label);
  // Ends a bar that is still open, so that an error line starts on a line of its own.
  ~DownloadProgress();
  DownloadProgress(const DownloadProgress&) = delete;
  DownloadProgress& operator=(const DownloadProgress&) = delete;

  // `have` bytes of `total` (0 while unknown) are on disk.
  void update(uint64_t have, uint64_t total);
  // Draws the final state and ends the line.
  void finish();

 private:
  void draw(uint64_t have, uint64_t total);

  std::string label_;
  bool terminal_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
  bool started_ = false;
  bool line_open_ = false;
  uint64_t first_ = 0;  // bytes already on disk when this run began
  uint64_t have_ = 0;
  uint64_t total_ = 0;
  int64_t last_step_ = -1;  // the tenth (or 100 MB) last reported in plain mode
  bool drawn_ = false;
  uint64_t drawn_have_ = 0;
};

}  // namespace sam2rt::cli
