#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "io/image.h"
#include "io/video_frame_source.h"

namespace sam2rt {

// The frames of a video read with FFmpeg's libraries (libavformat demuxes,
// libavcodec decodes, libswscale converts to RGB24 at the video's own size:
// bicubic, accurate rounding, full chroma interpolation, bit-exact, honouring
// the stream's YUV matrix and range). The official loader reads video files
// with decord, which is not in Debian and resizes inside FFmpeg; here the frame
// stays at its size and preprocess_video_frame applies the same Pillow BICUBIC
// resize as to JPEG frames (docs/VIDEO_FRAMES.md).
//
// `input` is a video file, "-" for standard input (a container that can be
// streamed: Matroska, NUT, MPEG-TS, MJPEG, ...; not MP4 unless fragmented) or
// a V4L2 camera (/dev/video*). The first video stream is read.
//
// Frame count: a file's frames are counted at opening by demuxing it (no
// decoding); a pipe's and a camera's are unknown (-1). A file whose header
// declares more frames than it holds (AVI, MP4) or lasts longer than its
// frames (a Matroska file's only stream), a packet or frame that FFmpeg flags
// as corrupt, any error FFmpeg logs about the input (Matroska's "File ended
// prematurely", a NUT file without its index), any decoding error (the
// decoders run with AV_EF_EXPLODE and CRC checks) and a file that decodes to
// fewer frames than it holds throw Error, never a partial or concealed frame.
//
// Going back (frame(i) before the current position, as reverse tracking
// does): a file seeks to the keyframe at or before frame i and decodes forward
// to it, identifying frames by their timestamps; where those are missing or
// not increasing, or the seek lands elsewhere, it reopens the file and decodes
// from the first frame. So reading a file backwards costs about one group of
// pictures of decoding per frame (one frame for intra-only codecs such as
// MJPEG or FFV1). Pipes and cameras cannot go back.
class FfmpegVideoFrames final : public VideoFrameSource {
 public:
  explicit FfmpegVideoFrames(const std::string& input,
                             int64_t max_pixels = kDefaultMaxImagePixels);
  ~FfmpegVideoFrames() override;
  FfmpegVideoFrames(const FfmpegVideoFrames&) = delete;
  FfmpegVideoFrames& operator=(const FfmpegVideoFrames&) = delete;

  std::optional<RgbImage> next() override;
  RgbImage frame(int64_t index) override;
  int64_t frame_count() const override;
  int width() const override;
  int height() const override;
  const std::string& origin() const override;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace sam2rt
