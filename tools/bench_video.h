#pragma once

#include <string>

#include "model_options.h"

namespace sam2rt::cli {

// `sam2rt bench --video`: tracks one object through a video (a click at the
// centre of frame 0, or `point`), timing each tracked frame after `warmup`
// untimed ones: the whole frame (read, encode, memory attention, SAM heads,
// memory encoder, masks at the video's size), with SAM2RT_PROFILE=1 per
// stage. At most `frames` tracked frames (0: the whole video).
struct VideoBench {
  std::string video_path;
  std::string point;  // "X,Y" in video pixels; empty: the centre
  int warmup = 1;
  int frames = 0;
  std::string json_path;
  void run(const ModelOptions& model) const;
};

}  // namespace sam2rt::cli
