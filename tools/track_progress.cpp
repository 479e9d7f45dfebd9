#include "track_progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>

namespace sam2rt::cli {

namespace {

constexpr int64_t kStreamReportEvery = 100;

std::string duration_text(double seconds) {
  const auto whole = static_cast<long long>(seconds + 0.5);
  char text[32];
  std::snprintf(text, sizeof(text), "%lld:%02lld", whole / 60, whole % 60);
  return text;
}

}  // namespace

TrackProgress::TrackProgress(int64_t total)
    : total_(total), terminal_(isatty(STDERR_FILENO) != 0), start_(std::chrono::steady_clock::now()) {}

TrackProgress::~TrackProgress() {
  if (line_open_) std::fputc('\n', stderr);
}

double TrackProgress::frames_per_second() const {
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  return seconds > 0 ? static_cast<double>(done_) / seconds : 0.0;
}

void TrackProgress::frame_done() {
  ++done_;
  const int64_t step = total_ > 0 ? 10 * done_ / total_ : done_ / kStreamReportEvery;
  if (!terminal_ && step == last_step_) return;
  last_step_ = step;
  draw();
}

void TrackProgress::finish() {
  if (terminal_ && line_open_) {
    std::fputc('\n', stderr);
    line_open_ = false;
  }
}

void TrackProgress::draw() {
  const double fps = frames_per_second();
  std::string line = "track: " + std::to_string(done_);
  if (total_ >= 0) line += "/" + std::to_string(total_);
  char rate[64];
  std::snprintf(rate, sizeof(rate), " frames, %.2f frames/s", fps);
  line += rate;
  if (total_ >= 0 && fps > 0) line += ", ETA " + duration_text(static_cast<double>(total_ - done_) / fps);
  std::fprintf(stderr, terminal_ ? "\r%-60s" : "%s\n", line.c_str());
  line_open_ = terminal_;
  std::fflush(stderr);
}

}  // namespace sam2rt::cli
