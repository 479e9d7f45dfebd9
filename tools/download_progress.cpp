#include "download_progress.h"

#include <unistd.h>

#include <cstdio>

namespace sam2rt::cli {

namespace {

constexpr double kMegabyte = 1e6;
constexpr uint64_t kPlainStepWithoutTotal = 100'000'000;
constexpr auto kRedrawInterval = std::chrono::milliseconds(100);
// A rate measured over less time than this says little (a first chunk from a buffer).
constexpr double kMinSecondsForRate = 0.5;

std::string clock_text(double seconds) {
  const long total = static_cast<long>(seconds + 0.5);
  char text[32];
  std::snprintf(text, sizeof text, "%ld:%02ld", total / 60, total % 60);
  return text;
}

}  // namespace

DownloadProgress::DownloadProgress(std::string label)
    : label_(std::move(label)),
      terminal_(isatty(STDERR_FILENO) != 0),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

DownloadProgress::~DownloadProgress() {
  if (line_open_) std::fputc('\n', stderr);
}

void DownloadProgress::update(uint64_t have, uint64_t total) {
  if (!started_ || have < first_) {  // the first call, or the server made us start over
    started_ = true;
    first_ = have;
    have_ = have;
    start_ = std::chrono::steady_clock::now();
    return;  // the baseline of the rate; nothing has arrived yet
  }
  have_ = have;
  total_ = total;
  if (terminal_) {
    const auto now = std::chrono::steady_clock::now();
    if (line_open_ && now - last_draw_ < kRedrawInterval) return;
    last_draw_ = now;
  } else {
    const int64_t step = total > 0 ? static_cast<int64_t>(10 * have / total)
                                   : static_cast<int64_t>(have / kPlainStepWithoutTotal);
    if (step == last_step_) return;
    last_step_ = step;
  }
  draw(have, total);
}

void DownloadProgress::finish() {
  if (terminal_) {
    draw(have_, total_);
    std::fputc('\n', stderr);
    line_open_ = false;
  } else if (!drawn_ || drawn_have_ != have_) {
    draw(have_, total_);
  }
  std::fflush(stderr);
}

void DownloadProgress::draw(uint64_t have, uint64_t total) {
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double rate = seconds > 0 ? static_cast<double>(have - first_) / seconds : 0.0;
  std::string line = label_ + ": ";
  char text[160];
  if (total > 0) {
    std::snprintf(text, sizeof text, "%5.1f%%, %.1f of %.1f MB", 100.0 * static_cast<double>(have) / static_cast<double>(total),
                  static_cast<double>(have) / kMegabyte, static_cast<double>(total) / kMegabyte);
  } else {
    std::snprintf(text, sizeof text, "%.1f MB", static_cast<double>(have) / kMegabyte);
  }
  line += text;
  if (seconds >= kMinSecondsForRate) {
    std::snprintf(text, sizeof text, ", %.1f MB/s", rate / kMegabyte);
    line += text;
    if (total > have && rate > 0) line += ", " + clock_text(static_cast<double>(total - have) / rate) + " left";
  }
  drawn_ = true;
  drawn_have_ = have;
  if (terminal_) {
    // Pad so that a shorter line fully covers the previous one.
    std::fprintf(stderr, "\r%-72s", line.c_str());
    line_open_ = true;
  } else {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  std::fflush(stderr);
}

}  // namespace sam2rt::cli
