#pragma once

#include <string>

#include "api/video_predictor.h"

namespace sam2rt {

// The frames of the video at `path` for a VideoPredictor, as the official
// init_state(video_path) reads them: a folder of JPEG frames or a video file
// (open_video_frames), each frame preprocessed for a model of `image_size`
// when tracking reaches it. Throws Error when the path cannot be opened or its
// length is unknown (a pipe or a camera: the predictor needs num_frames).
VideoFrames video_frames_from_path(const std::string& path, int image_size);

}  // namespace sam2rt
