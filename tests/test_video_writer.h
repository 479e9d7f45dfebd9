#pragma once

// Writes small test videos with libavformat/libavcodec, so the FFmpeg reader's
// tests need no committed video: lossless FFV1 (RGB, so every decoded
// pixel is checkable) or lossy MPEG-4 part 2 with B-frames and short groups of
// pictures (where going back must seek and decode forward), or Motion JPEG.

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libswscale/swscale.h>
}

#include <stdexcept>
#include <string>
#include <vector>

#include "io/image.h"

namespace sam2rt::testing {

struct TestVideoCodec {
  const char* encoder;
  AVPixelFormat pixel_format;
  int group_of_pictures;
  int b_frames;
};

inline constexpr TestVideoCodec kLosslessFfv1{"ffv1", AV_PIX_FMT_0RGB32, 1, 0};
inline constexpr TestVideoCodec kMpeg4WithBFrames{"mpeg4", AV_PIX_FMT_YUV420P, 4, 2};
inline constexpr TestVideoCodec kMotionJpeg{"mjpeg", AV_PIX_FMT_YUVJ420P, 1, 0};

// Whether packets carry their frame's duration. Without one, MP4's edit list
// ends where the last frame starts, and readers (FFmpeg's, players) leave
// that frame out: a file some muxing tools write.
enum class FrameDurations { kWritten, kLeftOut };

// Frames `frames` (all of one size) at 25 fps into `path`; the container
// follows the extension (.mkv, .avi, .nut, .mov, .mp4, ...).
inline void write_test_video(const std::string& path, const std::vector<RgbImage>& frames,
                             const TestVideoCodec& codec_choice,
                             FrameDurations durations = FrameDurations::kWritten) {
  auto check = [&](int status, const char* what) {
    if (status < 0) throw std::runtime_error(std::string("write_test_video: ") + what);
  };
  const int width = frames.front().width;
  const int height = frames.front().height;
  AVFormatContext* format = nullptr;
  check(avformat_alloc_output_context2(&format, nullptr, nullptr, path.c_str()), "container");
  const AVCodec* encoder = avcodec_find_encoder_by_name(codec_choice.encoder);
  if (!encoder) throw std::runtime_error("write_test_video: no encoder");
  AVCodecContext* codec = avcodec_alloc_context3(encoder);
  codec->width = width;
  codec->height = height;
  codec->pix_fmt = codec_choice.pixel_format;
  codec->time_base = AVRational{1, 25};
  codec->framerate = AVRational{25, 1};
  codec->gop_size = codec_choice.group_of_pictures;
  codec->max_b_frames = codec_choice.b_frames;
  codec->flags |= AV_CODEC_FLAG_BITEXACT;
  if (format->oformat->flags & AVFMT_GLOBALHEADER) codec->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  check(avcodec_open2(codec, encoder, nullptr), "encoder");
  AVStream* stream = avformat_new_stream(format, nullptr);
  check(avcodec_parameters_from_context(stream->codecpar, codec), "parameters");
  stream->time_base = codec->time_base;
  format->flags |= AVFMT_FLAG_BITEXACT;
  check(avio_open(&format->pb, path.c_str(), AVIO_FLAG_WRITE), "open");
  check(avformat_write_header(format, nullptr), "header");

  SwsContext* scaler = sws_getContext(width, height, AV_PIX_FMT_RGB24, width, height,
                                      codec_choice.pixel_format,
                                      SWS_BICUBIC | SWS_ACCURATE_RND | SWS_BITEXACT, nullptr,
                                      nullptr, nullptr);
  AVFrame* frame = av_frame_alloc();
  frame->format = codec_choice.pixel_format;
  frame->width = width;
  frame->height = height;
  check(av_frame_get_buffer(frame, 0), "frame");
  AVPacket* packet = av_packet_alloc();
  auto drain = [&] {
    while (avcodec_receive_packet(codec, packet) == 0) {
      packet->duration = durations == FrameDurations::kWritten ? 1 : 0;
      av_packet_rescale_ts(packet, codec->time_base, stream->time_base);
      packet->stream_index = stream->index;
      check(av_interleaved_write_frame(format, packet), "write");
    }
  };
  for (size_t i = 0; i < frames.size(); ++i) {
    check(av_frame_make_writable(frame), "writable");
    const uint8_t* source[1] = {frames[i].pixels.data()};
    const int source_stride[1] = {width * 3};
    sws_scale(scaler, source, source_stride, 0, height, frame->data, frame->linesize);
    frame->pts = static_cast<int64_t>(i);
    check(avcodec_send_frame(codec, frame), "encode");
    drain();
  }
  check(avcodec_send_frame(codec, nullptr), "flush");
  drain();
  check(av_write_trailer(format), "trailer");
  av_packet_free(&packet);
  av_frame_free(&frame);
  sws_freeContext(scaler);
  avcodec_free_context(&codec);
  avio_closep(&format->pb);
  avformat_free_context(format);
}

}  // namespace sam2rt::testing
