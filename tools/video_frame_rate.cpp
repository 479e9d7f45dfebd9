#include "video_frame_rate.h"

extern "C" {
#include <libavformat/avformat.h>
}

namespace sam2rt::cli {

std::optional<double> video_frame_rate(const std::string& path) {
  AVFormatContext* format = nullptr;
  if (avformat_open_input(&format, path.c_str(), nullptr, nullptr) < 0) return std::nullopt;
  std::optional<double> rate;
  if (avformat_find_stream_info(format, nullptr) >= 0) {
    const int stream = av_find_best_stream(format, AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
    if (stream >= 0) {
      for (const AVRational candidate : {format->streams[stream]->avg_frame_rate, format->streams[stream]->r_frame_rate}) {
        if (candidate.num > 0 && candidate.den > 0) {
          rate = av_q2d(candidate);
          break;
        }
      }
    }
  }
  avformat_close_input(&format);
  return rate;
}

}  // namespace sam2rt::cli
