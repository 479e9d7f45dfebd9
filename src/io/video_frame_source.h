#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "io/image.h"

namespace sam2rt {

// The frames of one video, decoded to 8-bit RGB at the video's own size (the
// model's resize and normalisation are preprocess_video_frame's), one at a
// time, so memory stays that of a frame whatever the video's length.
class VideoFrameSource {
 public:
  virtual ~VideoFrameSource() = default;

  // The next frame in order (the first on the first call), or nullopt after the
  // last. A frame that cannot be read throws Error naming the source.
  virtual std::optional<RgbImage> next() = 0;

  // Frame `index` (0-based); the next call of next() returns the frame after
  // it. Throws Error when the index is out of range or the source cannot go
  // back to it (a pipe or a camera is read once).
  virtual RgbImage frame(int64_t index) = 0;

  // How many frames the video has, known from the start, or -1 where it is not
  // (a pipe or a camera).
  virtual int64_t frame_count() const = 0;

  // The video's size (the official loader's video_width / video_height): the
  // first frame's. Every frame has this size or reading it throws Error.
  virtual int width() const = 0;
  virtual int height() const = 0;

  // What the frames are read from, for messages.
  virtual const std::string& origin() const = 0;
};

}  // namespace sam2rt
