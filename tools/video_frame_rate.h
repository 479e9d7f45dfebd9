#pragma once

#include <optional>
#include <string>

namespace sam2rt::cli {

// Frames per second of the first video stream of the file at `path`, as its
// container states it (the average frame rate, else the base rate); nullopt
// when it states none or the file cannot be probed. The frames themselves are
// read by open_video_frames; this is for display only.
std::optional<double> video_frame_rate(const std::string& path);

}  // namespace sam2rt::cli
