#include "io/video_frames.h"

#include <filesystem>
#include <system_error>

#include "io/ffmpeg_video_frames.h"
#include "io/jpeg_folder_frames.h"

namespace sam2rt {

std::unique_ptr<VideoFrameSource> open_video_frames(const std::string& path, int64_t max_pixels) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    return std::make_unique<JpegFolderFrames>(path, max_pixels);
  }
  return std::make_unique<FfmpegVideoFrames>(path, max_pixels);
}

}  // namespace sam2rt
