#include "io/video_file_writer.h"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/error.h>
#include <libavutil/log.h>
#include <libavutil/opt.h>
#include <libswscale/swscale.h>
}

#include <sys/types.h>

#include <cstdio>

#include "core/error.h"

namespace sam2rt {

namespace {

std::string ffmpeg_error_text(int code) {
  char text[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(code, text, sizeof(text));
  return text;
}

// libavformat writes through these into the AtomicFile's stream; the MP4 muxer
// seeks back to finish its header. (FFmpeg 5.1's callback takes the data as non-const.)
int write_to_file(void* opaque, uint8_t* data, int size) {
  auto* file = static_cast<AtomicFile*>(opaque);
  return std::fwrite(data, 1, static_cast<size_t>(size), file->stream()) == static_cast<size_t>(size)
             ? size
             : AVERROR(EIO);
}

int64_t seek_in_file(void* opaque, int64_t offset, int whence) {
  std::FILE* stream = static_cast<AtomicFile*>(opaque)->stream();
  if (whence & AVSEEK_SIZE) {
    const off_t here = ::ftello(stream);
    if (::fseeko(stream, 0, SEEK_END) != 0) return AVERROR(EIO);
    const off_t size = ::ftello(stream);
    ::fseeko(stream, here, SEEK_SET);
    return size;
  }
  if (::fseeko(stream, static_cast<off_t>(offset), whence & ~AVSEEK_FORCE) != 0) return AVERROR(EIO);
  return ::ftello(stream);
}

constexpr int kIoBufferBytes = 1 << 16;

}  // namespace

struct VideoFileWriter::State {
  std::string path;
  int width = 0, height = 0;  // of the input frames
  AtomicFile file;
  AVFormatContext* format = nullptr;
  AVIOContext* io = nullptr;
  AVCodecContext* codec = nullptr;
  AVStream* stream = nullptr;
  SwsContext* scaler = nullptr;
  AVFrame* frame = nullptr;
  AVPacket* packet = nullptr;
  int64_t next_pts = 0;

  explicit State(const std::string& target) : path(target), file(target) {}
  ~State() {
    av_packet_free(&packet);
    av_frame_free(&frame);
    sws_freeContext(scaler);
    avcodec_free_context(&codec);
    if (format) avformat_free_context(format);
    if (io) av_freep(&io->buffer);
    avio_context_free(&io);
  }

  void check(int status, const std::string& what) const {
    if (status < 0) throw Error("cannot write video '" + path + "': " + what + ": " + ffmpeg_error_text(status));
  }

  // Sends `input` (null: flush) and writes every packet the encoder has ready.
  void encode(const AVFrame* input) {
    check(avcodec_send_frame(codec, input), "encoding");
    while (true) {
      const int status = avcodec_receive_packet(codec, packet);
      if (status == AVERROR(EAGAIN) || status == AVERROR_EOF) return;
      check(status, "encoding");
      // Every frame lasts one tick; without it MP4's edit list ends at the last frame's start and
      // readers drop that frame.
      packet->duration = 1;
      av_packet_rescale_ts(packet, codec->time_base, stream->time_base);
      packet->stream_index = stream->index;
      check(av_interleaved_write_frame(format, packet), "writing");
    }
  }
};

VideoFileWriter::VideoFileWriter(const std::string& path, int width, int height, int frames_per_second)
    : state_(std::make_unique<State>(path)) {
  State& s = *state_;
  s.width = width;
  s.height = height;
  const int even_width = width & ~1, even_height = height & ~1;
  if (even_width == 0 || even_height == 0) {
    throw Error("cannot write video '" + path + "': frames of " + std::to_string(width) + "x" +
                std::to_string(height) + " are too small to encode");
  }
  const AVOutputFormat* container = av_guess_format(nullptr, path.c_str(), nullptr);
  if (!container) throw Error("cannot write video '" + path + "': no container for its extension (use .mp4 or .mkv)");
  s.check(avformat_alloc_output_context2(&s.format, container, nullptr, path.c_str()), "container");
  const AVCodec* encoder = avcodec_find_encoder_by_name("libx264");
  if (!encoder) encoder = avcodec_find_encoder(AV_CODEC_ID_MPEG4);
  if (!encoder) throw Error("cannot write video '" + path + "': this FFmpeg has neither libx264 nor mpeg4");
  s.codec = avcodec_alloc_context3(encoder);
  s.codec->width = even_width;
  s.codec->height = even_height;
  s.codec->pix_fmt = AV_PIX_FMT_YUV420P;
  s.codec->time_base = AVRational{1, frames_per_second};
  s.codec->framerate = AVRational{frames_per_second, 1};
  if (encoder->id == AV_CODEC_ID_MPEG4) s.codec->bit_rate = int64_t{even_width} * even_height * frames_per_second / 4;
  if (s.format->oformat->flags & AVFMT_GLOBALHEADER) s.codec->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  // libx264 logs its settings and statistics, and libavcodec its SEI text, at the info level: the
  // caller's stderr is for its own lines. x264's own log is off; FFmpeg's default log callback
  // (the one printing) filters by the global level, raised for the open only.
  AVDictionary* options = nullptr;
  if (encoder->id == AV_CODEC_ID_H264) av_dict_set(&options, "x264-params", "log=-1", 0);
  const int log_level = av_log_get_level();
  av_log_set_level(AV_LOG_ERROR);
  const int opened = avcodec_open2(s.codec, encoder, &options);
  av_log_set_level(log_level);
  av_dict_free(&options);
  s.check(opened, std::string("opening the ") + encoder->name + " encoder");
  s.stream = avformat_new_stream(s.format, nullptr);
  if (!s.stream) throw Error("cannot write video '" + path + "': out of memory");
  s.check(avcodec_parameters_from_context(s.stream->codecpar, s.codec), "stream parameters");
  s.stream->time_base = s.codec->time_base;

  auto* buffer = static_cast<unsigned char*>(av_malloc(kIoBufferBytes));
  s.io = avio_alloc_context(buffer, kIoBufferBytes, 1, &s.file, nullptr, write_to_file, seek_in_file);
  if (!s.io) {
    av_free(buffer);
    throw Error("cannot write video '" + path + "': out of memory");
  }
  s.format->pb = s.io;
  s.format->flags |= AVFMT_FLAG_CUSTOM_IO;
  s.check(avformat_write_header(s.format, nullptr), "header");

  s.scaler = sws_getContext(even_width, even_height, AV_PIX_FMT_RGB24, even_width, even_height, AV_PIX_FMT_YUV420P,
                            SWS_BICUBIC | SWS_ACCURATE_RND, nullptr, nullptr, nullptr);
  s.frame = av_frame_alloc();
  s.packet = av_packet_alloc();
  if (!s.scaler || !s.frame || !s.packet) throw Error("cannot write video '" + path + "': out of memory");
  s.frame->format = AV_PIX_FMT_YUV420P;
  s.frame->width = even_width;
  s.frame->height = even_height;
  s.check(av_frame_get_buffer(s.frame, 0), "frame buffer");
}

VideoFileWriter::~VideoFileWriter() = default;

const char* VideoFileWriter::encoder_name() const { return state_->codec->codec->name; }

void VideoFileWriter::write(const RgbImage& image) {
  State& s = *state_;
  if (image.width != s.width || image.height != s.height) {
    throw Error("cannot write video '" + s.path + "': a frame of " + std::to_string(image.width) + "x" +
                std::to_string(image.height) + " in a " + std::to_string(s.width) + "x" + std::to_string(s.height) +
                " video");
  }
  s.check(av_frame_make_writable(s.frame), "frame buffer");
  const uint8_t* rows[1] = {image.pixels.data()};
  const int strides[1] = {3 * image.width};  // the rows of the full frame; an odd last column is skipped
  sws_scale(s.scaler, rows, strides, 0, s.codec->height, s.frame->data, s.frame->linesize);
  s.frame->pts = s.next_pts++;
  s.encode(s.frame);
}

void VideoFileWriter::finish() {
  State& s = *state_;
  s.encode(nullptr);
  s.check(av_write_trailer(s.format), "trailer");
  avio_flush(s.io);
  s.file.commit();
}

}  // namespace sam2rt
