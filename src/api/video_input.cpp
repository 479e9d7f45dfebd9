#include "api/video_input.h"

#include <memory>

#include "core/error.h"
#include "io/video_frames.h"
#include "model/preprocess.h"

namespace sam2rt {

VideoFrames video_frames_from_path(const std::string& path, int image_size) {
  // Shared by the reader below, which outlives this call inside the predictor.
  std::shared_ptr<VideoFrameSource> source = open_video_frames(path);
  VideoFrames frames;
  frames.num_frames = source->frame_count();
  if (frames.num_frames < 0) {
    throw Error(source->origin() + ": the number of frames is unknown (a pipe or a camera); video tracking needs a "
                                   "video file or a folder of JPEG frames");
  }
  frames.width = source->width();
  frames.height = source->height();
  frames.load = [source, image_size](int64_t frame_idx) {
    return preprocess_video_frame(source->frame(frame_idx), image_size);
  };
  return frames;
}

}  // namespace sam2rt
