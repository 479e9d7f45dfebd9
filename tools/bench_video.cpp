#include "bench_video.h"

#include <omp.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <algorithm>
#include <array>
#include <memory>
#include <optional>

#include "api/video_predictor.h"
#include "core/error.h"
#include "io/atomic_file.h"
#include <nlohmann/json.hpp>
#include "io/video_frames.h"
#include "kernels/stage_profile.h"
#include "model/preprocess.h"
#include "timing_stats.h"

namespace sam2rt::cli {

namespace {

double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

std::array<float, 2> parse_point(const std::string& text, int width, int height) {
  if (text.empty()) return {static_cast<float>(width) / 2.0f, static_cast<float>(height) / 2.0f};
  float x = 0, y = 0;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%f,%f%c", &x, &y, &tail) != 2) {
    throw Error("--video-point '" + text + "': expected X,Y in the video's pixels");
  }
  return {x, y};
}

}  // namespace

void VideoBench::run(const ModelOptions& model) const {
  const std::shared_ptr<const Sam2Model> loaded = model.load(true);
  std::shared_ptr<VideoFrameSource> source = open_video_frames(video_path, model.max_image_pixels);
  if (source->frame_count() < 2) throw Error("--video '" + video_path + "': tracking needs at least 2 frames");
  const int image_size = loaded->config().image_size;
  VideoFrames video{.num_frames = source->frame_count(),
                     .width = source->width(),
                     .height = source->height(),
                     .load = [source, image_size](int64_t index) {
                       return preprocess_video_frame(source->frame(index), image_size);
                     }};
  VideoPredictor predictor(loaded, video, {.tracking = std::nullopt, .keep_all_outputs = false});
  const int64_t tracked = frames > 0 ? std::min<int64_t>(frames, video.num_frames - 1) : video.num_frames - 1;
  std::printf("sam2rt bench --video: %s, %s, %dx%d, %lld frames, %d threads, %d warm-up + %lld timed frames\n",
              model.source().describe().c_str(), video_path.c_str(), video.width, video.height,
              static_cast<long long>(video.num_frames), omp_get_max_threads(), warmup,
              static_cast<long long>(tracked - warmup));
  const std::array<float, 2> click = parse_point(point, video.width, video.height);
  auto start = std::chrono::steady_clock::now();
  predictor.add_new_points_or_box(0, 1, {click}, {1});
  const double prompt_ms = milliseconds_since(start);
  VideoPredictor::Propagation propagation = predictor.propagate_in_video(0, tracked);
  // Frame 0 is the prompted frame: its output is kept, not tracked.
  propagation.next();
  std::vector<double> samples;
  for (int64_t i = 0; i < tracked; ++i) {
    if (i == warmup) stage_profile_reset();
    start = std::chrono::steady_clock::now();
    if (!propagation.next()) break;
    if (i >= warmup) samples.push_back(milliseconds_since(start));
  }
  if (samples.empty()) throw Error("--video-frames: no frame left to time after the warm-up");
  const TimingStats stats = summarize(samples);
  std::printf("%-30s %9s %9s %9s %9s %9s\n", "ms", "min", "median", "mean", "max", "std");
  std::printf("%-30s %9.2f\n", "prompt (frame 0, encode+heads)", prompt_ms);
  std::printf("%-30s %9.2f %9.2f %9.2f %9.2f %9.2f  (%d frames)\n", "tracked frame", stats.min, stats.median,
              stats.mean, stats.max, stats.std, stats.runs);
  std::printf("peak RSS %.0f MB, outputs held at the end %lld\n", peak_rss_mb(),
              static_cast<long long>(predictor.outputs_held()));
  if (stage_profile_enabled()) {
    std::printf("\n");
    stage_profile_print(stdout, stats.runs, "tracked frame");
  }
  if (!json_path.empty()) {
    nlohmann::json report = {{"video", video_path},
                             {"model", model.source().describe()},
                             {"threads", omp_get_max_threads()},
                             {"frames", video.num_frames},
                             {"prompt_ms", prompt_ms},
                             {"tracked_frame_ms", to_json(stats)},
                             {"peak_rss_mb", peak_rss_mb()}};
    write_file_atomically(json_path, report.dump(2) + "\n");
  }
}

}  // namespace sam2rt::cli
