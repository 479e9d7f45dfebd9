#include "io/ffmpeg_video_frames.h"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavdevice/avdevice.h>
#include <libavformat/avformat.h>
#include <libavutil/error.h>
#include <libavutil/imgutils.h>
#include <libavutil/log.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>
}

#include <algorithm>
#include <cstdarg>
#include <cstring>
#include <mutex>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "io/printable_text.h"

namespace sam2rt {

namespace {

// FFmpeg reports some damage only through its log (Matroska's "File ended
// prematurely", a NUT file's missing index, a decoder's concealed slice), and
// the detail of every failure. Error lines are counted and the last one kept,
// per thread (the decoders run on the calling thread), for the Error's message;
// nothing is printed: errors are one line from the caller.
thread_local std::string last_ffmpeg_message;
thread_local uint64_t ffmpeg_errors_logged = 0;

void keep_ffmpeg_error(void* context, int level, const char* format, va_list arguments) {
  if (level > AV_LOG_ERROR) return;
  ++ffmpeg_errors_logged;
  char line[512];
  int print_prefix = 0;  // "[matroska @ 0x...]" names a pointer, not the file
  av_log_format_line2(context, level, format, arguments, line, sizeof(line), &print_prefix);
  std::string message(line);
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
  if (!message.empty()) last_ffmpeg_message = std::move(message);
}

void install_ffmpeg_log_once() {
  static std::once_flag installed;
  std::call_once(installed, [] {
    av_log_set_callback(keep_ffmpeg_error);
    avdevice_register_all();
  });
}

std::string ffmpeg_error_text(int code) {
  char text[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(code, text, sizeof(text));
  return text;
}

struct FormatCloser {
  void operator()(AVFormatContext* format) const { avformat_close_input(&format); }
};
struct CodecFreer {
  void operator()(AVCodecContext* codec) const { avcodec_free_context(&codec); }
};
struct PacketFreer {
  void operator()(AVPacket* packet) const { av_packet_free(&packet); }
};
struct FrameFreer {
  void operator()(AVFrame* frame) const { av_frame_free(&frame); }
};
struct ScalerFreer {
  void operator()(SwsContext* scaler) const { sws_freeContext(scaler); }
};

using FormatPtr = std::unique_ptr<AVFormatContext, FormatCloser>;
using CodecPtr = std::unique_ptr<AVCodecContext, CodecFreer>;
using PacketPtr = std::unique_ptr<AVPacket, PacketFreer>;
using FramePtr = std::unique_ptr<AVFrame, FrameFreer>;
using ScalerPtr = std::unique_ptr<SwsContext, ScalerFreer>;

bool is_camera(const std::string& input) { return input.rfind("/dev/video", 0) == 0; }

// Stamps compare only within one stream, so a missing one breaks the order.
bool increasing(const std::vector<int64_t>& stamps) {
  for (size_t i = 0; i < stamps.size(); ++i) {
    if (stamps[i] == AV_NOPTS_VALUE || (i > 0 && stamps[i] <= stamps[i - 1])) return false;
  }
  return true;
}

}  // namespace

struct FfmpegVideoFrames::State {
  std::string input;
  std::string origin;
  int64_t max_pixels = 0;

  FormatPtr format;
  CodecPtr codec;
  PacketPtr packet{av_packet_alloc()};
  FramePtr decoded{av_frame_alloc()};
  ScalerPtr scaler;
  AVStream* stream = nullptr;
  bool seekable = false;

  int width = 0;
  int height = 0;
  int64_t frame_count = -1;

  int64_t position = 0;       // index of the frame the decoder gives next
  bool draining = false;      // the demuxer is at its end, the decoder is emptying
  bool holding_frame = false;  // `decoded` holds frame `position`, not yet returned
  std::vector<int64_t> stamps;  // best-effort timestamp of every frame seen so far
  uint64_t errors_before = 0;   // ffmpeg_errors_logged when this input was opened

  // The scaler's colour set-up, redone only when a frame's differs.
  int scaled_format = -1;
  int scaled_colorspace = -1;
  int scaled_range = -1;
  std::vector<uint8_t> scaled;  // RGB24 rows with FFmpeg's alignment and padding
  int scaled_stride = 0;

  [[noreturn]] void fail(const std::string& what) const {
    std::string message = "cannot read video '" + origin + "': " + what;
    if (!last_ffmpeg_message.empty()) message += " (FFmpeg: " + last_ffmpeg_message + ")";
    throw Error(printable(message, 600));
  }

  // Any error FFmpeg logged about this input is an error here.
  void check_log() const {
    if (ffmpeg_errors_logged != errors_before) fail("damaged or truncated");
  }

  void check_size(int frame_width, int frame_height) const {
    const std::string size = std::to_string(frame_width) + "x" + std::to_string(frame_height);
    if (frame_width <= 0 || frame_height <= 0) fail("the video stream has no size (" + size + ")");
    if (int64_t{frame_width} * frame_height > max_pixels) {
      fail("frames of " + size + " exceed the limit of " + std::to_string(max_pixels) +
           " pixels; raise the pixel limit only for trusted videos");
    }
  }

  void open() {
    last_ffmpeg_message.clear();
    errors_before = ffmpeg_errors_logged;
    const AVInputFormat* forced = nullptr;
    std::string url = input;
    if (input == "-") {
      url = "pipe:0";
    } else if (is_camera(input)) {
      forced = av_find_input_format("video4linux2");
      if (!forced) fail("this FFmpeg has no video4linux2 input for cameras");
    }
    AVFormatContext* opened = nullptr;
    const int status = avformat_open_input(&opened, url.c_str(), forced, nullptr);
    if (status < 0) fail(ffmpeg_error_text(status));
    format.reset(opened);
    // Only video is read: the probing below must not decode (and report the
    // damage of) an audio or subtitle stream.
    for (unsigned i = 0; i < format->nb_streams; ++i) {
      if (format->streams[i]->codecpar->codec_type != AVMEDIA_TYPE_VIDEO) {
        format->streams[i]->discard = AVDISCARD_ALL;
      }
    }
    const int info = avformat_find_stream_info(format.get(), nullptr);
    if (info < 0) fail("cannot read the stream layout: " + ffmpeg_error_text(info));

    const AVCodec* decoder = nullptr;
    const int index = av_find_best_stream(format.get(), AVMEDIA_TYPE_VIDEO, -1, -1, &decoder, 0);
    if (index == AVERROR_STREAM_NOT_FOUND) fail("no video stream");
    if (index < 0 || !decoder) {
      const AVCodecDescriptor* codec =
          index >= 0 ? avcodec_descriptor_get(format->streams[index]->codecpar->codec_id) : nullptr;
      fail(std::string("no decoder in this FFmpeg for the video codec ") +
           (codec ? codec->name : "(unknown)"));
    }
    stream = format->streams[index];
    for (unsigned i = 0; i < format->nb_streams; ++i) {
      if (static_cast<int>(i) != index) format->streams[i]->discard = AVDISCARD_ALL;
    }
    seekable = input != "-" && !is_camera(input) && format->pb != nullptr &&
               (format->pb->seekable & AVIO_SEEKABLE_NORMAL) != 0;

    codec.reset(avcodec_alloc_context3(decoder));
    if (!codec) fail("out of memory");
    const int copied = avcodec_parameters_to_context(codec.get(), stream->codecpar);
    if (copied < 0) fail(ffmpeg_error_text(copied));
    // Damage is an error, never a concealed frame.
    codec->err_recognition |= AV_EF_EXPLODE | AV_EF_CRCCHECK;
    codec->thread_count = 1;
    const int ready = avcodec_open2(codec.get(), decoder, nullptr);
    if (ready < 0) fail("cannot open the decoder: " + ffmpeg_error_text(ready));
    check_log();

    position = 0;
    draining = false;
    holding_frame = false;
  }

  // A file's frames, counted by demuxing it to the end; then it is reopened.
  // Checks what the container says it holds against what it holds.
  void count_frames() {
    int64_t packets = 0;
    int64_t shown = 0;
    int64_t last_stamp = AV_NOPTS_VALUE;
    while (true) {
      const int status = av_read_frame(format.get(), packet.get());
      if (status == AVERROR_EOF) break;
      if (status < 0) fail("damaged after " + std::to_string(packets) + " frames: " +
                           ffmpeg_error_text(status));
      if (packet->stream_index == stream->index) {
        if (packet->flags & AV_PKT_FLAG_CORRUPT) {
          fail("frame " + std::to_string(packets) + " is flagged corrupt by the demuxer");
        }
        ++packets;
        if (!(packet->flags & AV_PKT_FLAG_DISCARD)) ++shown;
        const int64_t stamp = packet->pts != AV_NOPTS_VALUE ? packet->pts : packet->dts;
        if (stamp != AV_NOPTS_VALUE && (last_stamp == AV_NOPTS_VALUE || stamp > last_stamp)) {
          last_stamp = stamp;
        }
      }
      av_packet_unref(packet.get());
    }
    if (format->pb && format->pb->error < 0) fail(ffmpeg_error_text(format->pb->error));
    check_log();
    const int64_t declared = declared_frames();
    if (declared > packets) {
      fail("truncated: the header declares " + std::to_string(declared) +
           " frames, the file holds " + std::to_string(packets));
    }
    check_duration(last_stamp);
    if (shown == 0) fail("the video stream holds no frames");
    frame_count = shown;
    open();
  }

  // The frames the header says the stream holds (0: it does not say). An MP4
  // or QuickTime header counts every sample, but its edit list can end before
  // the last of them (a last frame written without a duration): the demuxer
  // then leaves those samples out of its index, as players leave them out.
  int64_t declared_frames() const {
    int64_t declared = stream->nb_frames;
    if (std::string_view(format->iformat->name).starts_with("mov,")) {
      const int indexed = avformat_index_get_entries_count(stream);
      if (indexed > 0) declared = std::min<int64_t>(declared, indexed);
    }
    return declared;
  }

  // Containers such as Matroska record no frame count, only a duration
  // (written when the file was finished). Trusted where it is the video's own:
  // the file's only stream, read from the header. A gap of more than two frame
  // intervals after the last frame means frames are missing; the last frame
  // alone can go missing unseen.
  void check_duration(int64_t last_stamp) const {
    const AVRational rate = stream->avg_frame_rate.num > 0 ? stream->avg_frame_rate
                                                           : stream->r_frame_rate;
    if (format->nb_streams != 1 || last_stamp == AV_NOPTS_VALUE || rate.num <= 0 ||
        rate.den <= 0 || format->duration <= 0 ||
        format->duration_estimation_method != AVFMT_DURATION_FROM_STREAM) {
      return;
    }
    const int64_t start = format->start_time != AV_NOPTS_VALUE ? format->start_time : 0;
    const int64_t declared_end =
        av_rescale_q(start + format->duration, AV_TIME_BASE_Q, stream->time_base);
    const int64_t interval = av_rescale_q(1, av_inv_q(rate), stream->time_base);
    if (declared_end - last_stamp > 2 * std::max<int64_t>(interval, 1)) {
      const double seconds = static_cast<double>(format->duration) / AV_TIME_BASE;
      const double last = static_cast<double>(last_stamp) * av_q2d(stream->time_base);
      fail("truncated: the container lasts " + std::to_string(seconds) +
           " s, its last frame starts at " + std::to_string(last) + " s");
    }
  }

  // Decodes the next frame into `decoded`; false after the last one.
  bool decode_next() {
    if (holding_frame) {
      holding_frame = false;
      return true;
    }
    while (true) {
      av_frame_unref(decoded.get());
      const int received = avcodec_receive_frame(codec.get(), decoded.get());
      if (received == 0) {
        check_log();
        if (decoded->decode_error_flags != 0 || (decoded->flags & AV_FRAME_FLAG_CORRUPT)) {
          fail("frame " + std::to_string(position) + " is damaged");
        }
        return true;
      }
      if (received == AVERROR_EOF) {
        check_log();
        return false;
      }
      if (received != AVERROR(EAGAIN)) {
        fail("cannot decode frame " + std::to_string(position) + ": " +
             ffmpeg_error_text(received));
      }
      if (draining) fail("the decoder stopped without its end-of-stream mark");
      const int status = av_read_frame(format.get(), packet.get());
      if (status == AVERROR_EOF) {
        if (format->pb && format->pb->error < 0) fail(ffmpeg_error_text(format->pb->error));
        draining = true;
        const int flushed = avcodec_send_packet(codec.get(), nullptr);
        if (flushed < 0) fail("cannot finish decoding: " + ffmpeg_error_text(flushed));
        continue;
      }
      if (status < 0) {
        fail("damaged after " + std::to_string(position) + " frames: " +
             ffmpeg_error_text(status));
      }
      if (packet->stream_index != stream->index) {
        av_packet_unref(packet.get());
        continue;
      }
      if (packet->flags & AV_PKT_FLAG_CORRUPT) {
        fail("a packet after frame " + std::to_string(position) +
             " is flagged corrupt by the demuxer");
      }
      const int sent = avcodec_send_packet(codec.get(), packet.get());
      av_packet_unref(packet.get());
      if (sent < 0) {
        fail("cannot decode frame " + std::to_string(position) + ": " + ffmpeg_error_text(sent));
      }
    }
  }

  // Decodes frame `position` and moves past it; false after the last frame
  // (an Error when fewer frames decode than the file holds).
  bool advance() {
    if (!decode_next()) {
      if (frame_count >= 0 && position < frame_count) {
        fail("decoded " + std::to_string(position) + " of the " + std::to_string(frame_count) +
             " frames the file holds (truncated or damaged)");
      }
      if (frame_count < 0) frame_count = position;
      return false;
    }
    if (decoded->width != width || decoded->height != height) {
      fail("frame " + std::to_string(position) + " is " + std::to_string(decoded->width) + "x" +
           std::to_string(decoded->height) + ", the video started at " + std::to_string(width) +
           "x" + std::to_string(height) + "; every frame of a video must have one size");
    }
    const int64_t stamp = decoded->best_effort_timestamp;
    if (position == static_cast<int64_t>(stamps.size())) {
      stamps.push_back(stamp);
    } else if (increasing(stamps) && stamps[static_cast<size_t>(position)] != stamp) {
      fail("frame " + std::to_string(position) + " came back with another timestamp after a seek");
    }
    ++position;
    return true;
  }

  RgbImage to_rgb() {
    const AVFrame& frame = *decoded;
    if (frame.format != scaled_format || frame.colorspace != scaled_colorspace ||
        frame.color_range != scaled_range || !scaler) {
      const auto source_format = static_cast<AVPixelFormat>(frame.format);
      scaler.reset(sws_getContext(width, height, source_format, width, height, AV_PIX_FMT_RGB24,
                                  SWS_BICUBIC | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT |
                                      SWS_BITEXACT,
                                  nullptr, nullptr, nullptr));
      if (!scaler) {
        const char* name = av_get_pix_fmt_name(source_format);
        fail(std::string("cannot convert pixel format ") + (name ? name : "(unknown)") +
             " to RGB");
      }
      const AVPixFmtDescriptor* layout = av_pix_fmt_desc_get(source_format);
      const bool yuv = layout && layout->nb_components >= 3 && !(layout->flags & AV_PIX_FMT_FLAG_RGB);
      if (yuv) {
        sws_setColorspaceDetails(scaler.get(), sws_getCoefficients(frame.colorspace),
                                 frame.color_range == AVCOL_RANGE_JPEG,
                                 sws_getCoefficients(SWS_CS_DEFAULT), 1, 0, 1 << 16, 1 << 16);
      }
      scaled_format = frame.format;
      scaled_colorspace = frame.colorspace;
      scaled_range = frame.color_range;
      scaled_stride = FFALIGN(width * 3, 64);
      scaled.assign(static_cast<size_t>(scaled_stride) * height + 64, 0);
    }
    uint8_t* planes[4] = {scaled.data(), nullptr, nullptr, nullptr};
    int strides[4] = {scaled_stride, 0, 0, 0};
    const int rows = sws_scale(scaler.get(), frame.data, frame.linesize, 0, height, planes, strides);
    if (rows != height) fail("cannot convert frame " + std::to_string(position - 1) + " to RGB");
    RgbImage image{width, height, std::vector<uint8_t>(static_cast<size_t>(width) * height * 3)};
    for (int y = 0; y < height; ++y) {
      std::memcpy(&image.pixels[static_cast<size_t>(y) * width * 3],
                  &scaled[static_cast<size_t>(y) * scaled_stride], static_cast<size_t>(width) * 3);
    }
    return image;
  }

  // Puts the decoder just before frame `index` (< position) by seeking to the
  // keyframe at or before it; false where that cannot be trusted.
  bool seek_before(int64_t index) {
    if (!increasing(stamps)) return false;
    if (av_seek_frame(format.get(), stream->index, stamps[static_cast<size_t>(index)],
                      AVSEEK_FLAG_BACKWARD) < 0) {
      return false;
    }
    avcodec_flush_buffers(codec.get());
    errors_before = ffmpeg_errors_logged;
    draining = false;
    holding_frame = false;
    if (!decode_next()) return false;
    const auto found = std::lower_bound(stamps.begin(), stamps.end(), decoded->best_effort_timestamp);
    if (found == stamps.end() || *found != decoded->best_effort_timestamp) return false;
    const int64_t landed = found - stamps.begin();
    if (landed > index) return false;
    position = landed;
    holding_frame = true;
    // advance() checks that the frames come in the order first seen.
    while (position < index) {
      if (!advance()) return false;
    }
    return true;
  }
};

FfmpegVideoFrames::FfmpegVideoFrames(const std::string& input, int64_t max_pixels)
    : state_(std::make_unique<State>()) {
  install_ffmpeg_log_once();
  State& state = *state_;
  state.input = input;
  state.origin = printable(input == "-" ? std::string("standard input") : input, 200);
  state.max_pixels = max_pixels;
  if (!state.packet || !state.decoded) state.fail("out of memory");
  state.open();
  state.width = state.codec->width;
  state.height = state.codec->height;
  state.check_size(state.width, state.height);
  if (state.seekable) state.count_frames();
}

FfmpegVideoFrames::~FfmpegVideoFrames() = default;

std::optional<RgbImage> FfmpegVideoFrames::next() {
  last_ffmpeg_message.clear();
  if (!state_->advance()) return std::nullopt;
  return state_->to_rgb();
}

RgbImage FfmpegVideoFrames::frame(int64_t index) {
  last_ffmpeg_message.clear();
  State& state = *state_;
  if (index < 0 || (state.frame_count >= 0 && index >= state.frame_count)) {
    state.fail("no frame " + std::to_string(index) + " (it has " +
               (state.frame_count >= 0 ? std::to_string(state.frame_count) : "an unknown number of") +
               " frames)");
  }
  if (index < state.position) {
    if (!state.seekable) {
      state.fail("cannot go back to frame " + std::to_string(index) +
                 ": a pipe or camera is read once; read the video from a file");
    }
    bool placed = false;
    try {
      placed = state.seek_before(index);
    } catch (const Error&) {
      placed = false;  // whatever the seek broke, decoding from the start is exact
    }
    if (!placed) state.open();
  }
  while (state.position < index) {
    if (!state.advance()) {
      state.fail("no frame " + std::to_string(index) + " (it has " +
                 std::to_string(state.position) + " frames)");
    }
  }
  std::optional<RgbImage> image = next();
  if (!image) state.fail("no frame " + std::to_string(index));
  return std::move(*image);
}

int64_t FfmpegVideoFrames::frame_count() const { return state_->frame_count; }
int FfmpegVideoFrames::width() const { return state_->width; }
int FfmpegVideoFrames::height() const { return state_->height; }
const std::string& FfmpegVideoFrames::origin() const { return state_->origin; }

}  // namespace sam2rt
