#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "io/image.h"
#include "io/video_frame_source.h"

namespace sam2rt {

// The frames of `path` as the official load_video_frames chooses its reader: a
// folder is a folder of JPEG frames (JpegFolderFrames); anything else is read
// with FFmpeg (FfmpegVideoFrames): a video file of any container and codec
// FFmpeg reads (the official loader takes .mp4 only), "-" for standard input or
// a /dev/video* camera. Throws Error when it cannot be opened.
std::unique_ptr<VideoFrameSource> open_video_frames(const std::string& path,
                                                    int64_t max_pixels = kDefaultMaxImagePixels);

}  // namespace sam2rt
