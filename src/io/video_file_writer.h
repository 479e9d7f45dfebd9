#pragma once

#include <memory>
#include <string>

#include "io/atomic_file.h"
#include "io/image.h"

namespace sam2rt {

// Encodes RGB frames into a video file with libavformat/libavcodec: H.264
// (libx264) where this FFmpeg has it, MPEG-4 part 2 otherwise, in yuv420p
// (what every player takes), the container chosen by the file's extension
// (.mp4, .mkv, .avi, ...). yuv420p needs even sides: an odd last column or row
// is left out. The file appears complete at finish() (written as an
// AtomicFile); destroyed before, it leaves no file. Errors throw Error naming
// the path.
class VideoFileWriter {
 public:
  VideoFileWriter(const std::string& path, int width, int height, int frames_per_second);
  ~VideoFileWriter();
  VideoFileWriter(const VideoFileWriter&) = delete;
  VideoFileWriter& operator=(const VideoFileWriter&) = delete;

  // One frame of the size given to the constructor.
  void write(const RgbImage& frame);
  // Flushes the encoder, writes the container's index and commits the file.
  void finish();
  // The encoder in use ("libx264" or "mpeg4"), for messages.
  const char* encoder_name() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace sam2rt
