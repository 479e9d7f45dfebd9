// Video frame sources: a folder of JPEG frames picked and ordered as the
// official loader does, and FFmpeg's files, pipes and their failures.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "io/ffmpeg_video_frames.h"
#include "io/jpeg_folder_frames.h"
#include "io/jpeg_writer.h"
#include "io/video_frames.h"
#include "test_video_writer.h"
#include "test_zip_builder.h"

namespace sam2rt {
namespace {

using testing::kLosslessFfv1;
using testing::kMpeg4WithBFrames;
using testing::TempDir;
using testing::write_test_video;

// Frame `index` of a test video: a pattern no two frames share, with strong
// edges (chroma subsampling would blur them: the lossless codec stores RGB).
RgbImage pattern_frame(int index, int width = 48, int height = 32) {
  RgbImage image{width, height, std::vector<uint8_t>(static_cast<size_t>(width) * height * 3)};
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      uint8_t* pixel = &image.pixels[(static_cast<size_t>(y) * width + x) * 3];
      pixel[0] = static_cast<uint8_t>(x * 5 + index * 40);
      pixel[1] = static_cast<uint8_t>(y * 7 + index * 13);
      pixel[2] = static_cast<uint8_t>(((x / 4 + y / 4 + index) % 2) * 255);
    }
  }
  return image;
}

std::vector<RgbImage> pattern_frames(int count) {
  std::vector<RgbImage> frames;
  for (int i = 0; i < count; ++i) frames.push_back(pattern_frame(i));
  return frames;
}

void write_jpeg(const std::filesystem::path& path, const RgbImage& image) {
  const std::vector<uint8_t> bytes =
      encode_jpeg_rgb8(image.pixels.data(), image.width, image.height, 95);
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

std::vector<RgbImage> read_all(VideoFrameSource& source) {
  std::vector<RgbImage> frames;
  while (std::optional<RgbImage> frame = source.next()) frames.push_back(std::move(*frame));
  return frames;
}

TEST(VideoJpegFolder, OrdersFramesByTheIntegerOfTheirNames) {
  TempDir dir;
  for (const char* name : {"9.jpg", "10.jpg", "0.jpg", "007.jpeg", "1.JPG", "2.JPEG", "-1.jpg",
                           " 5.jpg", "1_1.jpg", "notes.txt", "3.png", "4.Jpg", ".jpg", "8.jpg.bak"}) {
    std::ofstream(dir.path() / name) << "x";
  }
  EXPECT_EQ(jpeg_frame_names(dir.path().string()),
            (std::vector<std::string>{"-1.jpg", "0.jpg", "1.JPG", "2.JPEG", " 5.jpg", "007.jpeg",
                                      "9.jpg", "10.jpg", "1_1.jpg"}));
}

TEST(VideoJpegFolder, OrdersIntegersOfAnyLengthAndTiesByName) {
  TempDir dir;
  for (const char* name : {"100000000000000000000000.jpg", "99999999999999999999999.jpg",
                           "07.jpg", "7.jpg", "-20.jpg", "-3.jpg", "-0.jpg"}) {
    std::ofstream(dir.path() / name) << "x";
  }
  EXPECT_EQ(jpeg_frame_names(dir.path().string()),
            (std::vector<std::string>{"-20.jpg", "-3.jpg", "-0.jpg", "07.jpg", "7.jpg",
                                      "99999999999999999999999.jpg",
                                      "100000000000000000000000.jpg"}));
}

TEST(VideoJpegFolder, RefusesFoldersTheOfficialLoaderRefuses) {
  TempDir empty;
  EXPECT_NE(error_of([&] { jpeg_frame_names(empty.path().string()); }).find("no JPEG frames"),
            std::string::npos);
  TempDir no_jpegs;
  std::ofstream(no_jpegs.path() / "0.png") << "x";
  std::ofstream(no_jpegs.path() / "1.Jpg") << "x";
  EXPECT_NE(error_of([&] { jpeg_frame_names(no_jpegs.path().string()); }).find("no JPEG frames"),
            std::string::npos);
  for (const char* bad : {"frame_0001.jpg", "1__0.jpg", "_1.jpg", "1.5.jpg", "+.jpg", "0x1.jpg"}) {
    TempDir dir;
    std::ofstream(dir.path() / "0.jpg") << "x";
    std::ofstream(dir.path() / bad) << "x";
    const std::string message = error_of([&] { jpeg_frame_names(dir.path().string()); });
    EXPECT_NE(message.find(std::string("'") + bad + "' is not named <integer>.jpg"),
              std::string::npos)
        << message;
  }
  EXPECT_NE(error_of([&] { JpegFolderFrames("/nonexistent/video/folder"); }).find("cannot list"),
            std::string::npos);
}

TEST(VideoJpegFolder, ReadsFramesInOrderAtTheirOwnSize) {
  TempDir dir;
  for (int i = 0; i < 3; ++i) write_jpeg(dir.path() / (std::to_string(i * 5) + ".jpg"), pattern_frame(i));
  JpegFolderFrames frames(dir.path().string());
  EXPECT_EQ(frames.frame_count(), 3);
  EXPECT_EQ(frames.width(), 48);
  EXPECT_EQ(frames.height(), 32);
  const std::vector<RgbImage> all = read_all(frames);
  ASSERT_EQ(all.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    const RgbImage expected =
        decode_image_file((dir.path() / (std::to_string(i * 5) + ".jpg")).string());
    EXPECT_EQ(all[i].pixels, expected.pixels) << "frame " << i;
  }
  EXPECT_EQ(frames.frame(1).pixels, all[1].pixels);
  EXPECT_EQ(frames.next()->pixels, all[2].pixels);
  EXPECT_FALSE(frames.next().has_value());
  EXPECT_THROW(frames.frame(3), Error);
  EXPECT_THROW(frames.frame(-1), Error);
}

TEST(VideoJpegFolder, RefusesAFrameOfAnotherSize) {
  TempDir dir;
  write_jpeg(dir.path() / "0.jpg", pattern_frame(0));
  write_jpeg(dir.path() / "1.jpg", pattern_frame(1, 40, 32));
  JpegFolderFrames frames(dir.path().string());
  ASSERT_TRUE(frames.next().has_value());
  EXPECT_NE(error_of([&] { frames.next(); }).find("every frame of a video must have one size"),
            std::string::npos);
}

TEST(VideoJpegFolder, OpenVideoFramesTakesAFolderAsJpegFrames) {
  TempDir dir;
  write_jpeg(dir.path() / "0.jpg", pattern_frame(0));
  auto source = open_video_frames(dir.path().string());
  EXPECT_NE(dynamic_cast<JpegFolderFrames*>(source.get()), nullptr);
  EXPECT_EQ(source->frame_count(), 1);
}

class VideoFfmpegContainer : public ::testing::TestWithParam<const char*> {};

TEST_P(VideoFfmpegContainer, LosslessRoundTripGivesEveryPixelBack) {
  TempDir dir;
  const std::string path = (dir.path() / (std::string("clip.") + GetParam())).string();
  const std::vector<RgbImage> written = pattern_frames(5);
  write_test_video(path, written, kLosslessFfv1);
  auto source = open_video_frames(path);
  ASSERT_NE(dynamic_cast<FfmpegVideoFrames*>(source.get()), nullptr);
  EXPECT_EQ(source->frame_count(), 5);
  EXPECT_EQ(source->width(), 48);
  EXPECT_EQ(source->height(), 32);
  const std::vector<RgbImage> read = read_all(*source);
  ASSERT_EQ(read.size(), 5u);
  for (size_t i = 0; i < read.size(); ++i) {
    EXPECT_EQ(read[i].width, 48);
    EXPECT_EQ(read[i].height, 32);
    EXPECT_EQ(read[i].pixels, written[i].pixels) << "frame " << i;
  }
  // Backwards, as reverse tracking reads.
  for (int i = 4; i >= 0; --i) EXPECT_EQ(source->frame(i).pixels, written[i].pixels) << i;
  EXPECT_EQ(source->next()->pixels, written[1].pixels);
}

TEST_P(VideoFfmpegContainer, TruncatedFileIsOneClearError) {
  TempDir dir;
  const std::string path = (dir.path() / (std::string("clip.") + GetParam())).string();
  write_test_video(path, pattern_frames(6), kLosslessFfv1);
  const auto size = std::filesystem::file_size(path);
  for (double kept : {0.97, 0.8, 0.5, 0.2, 0.01}) {
    const std::string cut = (dir.path() / (std::string("cut.") + GetParam())).string();
    std::filesystem::copy_file(path, cut, std::filesystem::copy_options::overwrite_existing);
    std::filesystem::resize_file(cut, static_cast<uintmax_t>(static_cast<double>(size) * kept));
    const std::string message = error_of([&] {
      FfmpegVideoFrames frames(cut);
      read_all(frames);
    });
    EXPECT_EQ(message.rfind("cannot read video '" + cut + "': ", 0), 0u)
        << GetParam() << " cut to " << kept << ": " << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

// Damaged bytes anywhere give frames or one Error: never a crash, a hang or
// another exception (the sanitizer build runs this too).
TEST_P(VideoFfmpegContainer, DamagedBytesGiveFramesOrOneError) {
  TempDir dir;
  const std::string path = (dir.path() / (std::string("clip.") + GetParam())).string();
  write_test_video(path, pattern_frames(4), kLosslessFfv1);
  const testing::Bytes original = testing::read_whole_file(path);
  std::mt19937 random(20261206);
  int refused = 0;
  constexpr int kMutants = 60;
  for (int mutant = 0; mutant < kMutants; ++mutant) {
    testing::Bytes bytes = original;
    const int flips = 1 + static_cast<int>(random() % 8);
    for (int i = 0; i < flips; ++i) {
      bytes[random() % bytes.size()] ^= static_cast<uint8_t>(1 + random() % 255);
    }
    const std::string damaged = dir.write(std::string("damaged.") + GetParam(), bytes);
    try {
      FfmpegVideoFrames frames(damaged);
      const std::vector<RgbImage> read = read_all(frames);
      for (const RgbImage& frame : read) {
        EXPECT_EQ(frame.pixels.size(), static_cast<size_t>(frames.width()) * frames.height() * 3);
      }
      if (!read.empty()) frames.frame(0);
    } catch (const Error& error) {
      ++refused;
      EXPECT_EQ(std::string(error.what()).rfind("cannot read video", 0), 0u) << error.what();
    }
  }
  EXPECT_GT(refused, 0);
}

INSTANTIATE_TEST_SUITE_P(VideoContainers, VideoFfmpegContainer, ::testing::Values("mkv", "avi", "nut", "mov"));

// A last frame written without a duration falls outside MP4's edit list:
// the file shows one frame fewer than its header counts, as FFmpeg's own
// tools and players show it; neither codec kind calls that truncated.
TEST(VideoFfmpeg, Mp4ReadsTheFramesItsEditListShows) {
  TempDir dir;
  for (const testing::TestVideoCodec& codec : {testing::kMotionJpeg, kMpeg4WithBFrames}) {
    for (const auto durations : {testing::FrameDurations::kWritten, testing::FrameDurations::kLeftOut}) {
      const std::string path = (dir.path() / "clip.mp4").string();
      write_test_video(path, pattern_frames(8), codec, durations);
      FfmpegVideoFrames frames(path);
      const int64_t shown = durations == testing::FrameDurations::kWritten ? 8 : 7;
      EXPECT_EQ(frames.frame_count(), shown) << codec.encoder;
      EXPECT_EQ(static_cast<int64_t>(read_all(frames).size()), shown) << codec.encoder;
      EXPECT_EQ(frames.frame(shown - 1).width, 48) << codec.encoder;
    }
  }
}

TEST(VideoFfmpeg, GoingBackSeeksThroughGroupsOfPicturesWithBFrames) {
  TempDir dir;
  const std::string path = (dir.path() / "clip.mkv").string();
  write_test_video(path, pattern_frames(13), kMpeg4WithBFrames);
  FfmpegVideoFrames frames(path);
  EXPECT_EQ(frames.frame_count(), 13);
  const std::vector<RgbImage> sequential = read_all(frames);
  ASSERT_EQ(sequential.size(), 13u);
  for (int i = 12; i >= 0; --i) EXPECT_EQ(frames.frame(i).pixels, sequential[i].pixels) << i;
  for (int i : {7, 2, 11, 0, 12, 5}) EXPECT_EQ(frames.frame(i).pixels, sequential[i].pixels) << i;
  EXPECT_THROW(frames.frame(13), Error);
}

// AVI keeps no presentation timestamps; with B-frames the decoded frames'
// stamps are not in order, so going back reopens the file and decodes from
// the start. The frames are the same.
TEST(VideoFfmpeg, GoingBackWithoutUsableTimestampsDecodesFromTheStart) {
  TempDir dir;
  const std::string path = (dir.path() / "clip.avi").string();
  write_test_video(path, pattern_frames(5), kMpeg4WithBFrames);
  FfmpegVideoFrames frames(path);
  EXPECT_EQ(frames.frame_count(), 5);
  const std::vector<RgbImage> sequential = read_all(frames);
  ASSERT_EQ(sequential.size(), 5u);
  for (int i = 4; i >= 0; --i) EXPECT_EQ(frames.frame(i).pixels, sequential[i].pixels) << i;
}

// A raw Motion JPEG stream (what a camera or `ffmpeg -f mjpeg` writes): no
// container at all, frames counted and read backwards all the same.
TEST(VideoFfmpeg, ReadsARawMotionJpegStream) {
  TempDir dir;
  const std::string path = (dir.path() / "clip.mjpeg").string();
  write_test_video(path, pattern_frames(5), testing::kMotionJpeg);
  FfmpegVideoFrames frames(path);
  EXPECT_EQ(frames.frame_count(), 5);
  const std::vector<RgbImage> sequential = read_all(frames);
  ASSERT_EQ(sequential.size(), 5u);
  for (int i = 4; i >= 0; --i) EXPECT_EQ(frames.frame(i).pixels, sequential[i].pixels) << i;
}

TEST(VideoFfmpeg, RefusesWhatIsNoVideo) {
  TempDir dir;
  const std::string empty = dir.write("empty.mkv", {});
  EXPECT_EQ(error_of([&] { FfmpegVideoFrames frames(empty); }).rfind("cannot read video", 0), 0u);
  const std::string noise = dir.write("noise.mkv", testing::Bytes(4096, 0x5A));
  EXPECT_EQ(error_of([&] { FfmpegVideoFrames frames(noise); }).rfind("cannot read video", 0), 0u);
  EXPECT_EQ(error_of([&] { open_video_frames((dir.path() / "missing.mp4").string()); })
                .rfind("cannot read video", 0),
            0u);
}

// A named pipe is read once, in order, with no count in advance.
TEST(VideoFfmpeg, ReadsAPipeInOrderWithoutGoingBack) {
  TempDir dir;
  const std::string video = (dir.path() / "clip.nut").string();
  const std::vector<RgbImage> written = pattern_frames(4);
  write_test_video(video, written, kLosslessFfv1);
  const std::string fifo = (dir.path() / "pipe").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::thread writer([&] {
    std::ifstream in(video, std::ios::binary);
    std::ofstream out(fifo, std::ios::binary);
    out << in.rdbuf();
  });
  std::string failure;
  try {
    FfmpegVideoFrames frames(fifo);
    EXPECT_EQ(frames.frame_count(), -1);
    EXPECT_EQ(frames.frame(1).pixels, written[1].pixels);
    EXPECT_NE(error_of([&] { frames.frame(0); }).find("cannot go back"), std::string::npos);
    EXPECT_EQ(frames.next()->pixels, written[2].pixels);
    EXPECT_EQ(frames.next()->pixels, written[3].pixels);
    EXPECT_FALSE(frames.next().has_value());
    EXPECT_EQ(frames.frame_count(), 4);
  } catch (const Error& error) {
    failure = error.what();
  }
  writer.join();
  EXPECT_EQ(failure, "");
}

// "-" reads standard input, as `some_tool | sam2rt ... --video -` would: in a
// child process whose stdin is the pipe's read end, so the test's own stdin is
// left alone. The child reports by exit status: 0 when every frame came back.
TEST(VideoFfmpeg, ReadsStandardInputAsDash) {
  TempDir dir;
  const std::string video = (dir.path() / "clip.mkv").string();
  const std::vector<RgbImage> written = pattern_frames(3);
  write_test_video(video, written, kLosslessFfv1);
  const testing::Bytes bytes = testing::read_whole_file(video);
  int pipe_ends[2];
  ASSERT_EQ(::pipe(pipe_ends), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(pipe_ends[1]);
    ::dup2(pipe_ends[0], STDIN_FILENO);
    int status = 0;
    try {
      FfmpegVideoFrames frames("-");
      if (frames.frame_count() != -1 || frames.origin() != "standard input") status = 2;
      for (const RgbImage& expected : written) {
        std::optional<RgbImage> frame = frames.next();
        if (!frame || frame->pixels != expected.pixels) status = 3;
      }
      if (frames.next()) status = 4;
    } catch (const Error&) {
      status = 5;
    }
    ::_exit(status);
  }
  ::close(pipe_ends[0]);
  // A child that stopped early must fail the test, not kill it with SIGPIPE.
  const auto previous_handler = std::signal(SIGPIPE, SIG_IGN);
  size_t written_bytes = 0;
  while (written_bytes < bytes.size()) {
    const ssize_t n =
        ::write(pipe_ends[1], bytes.data() + written_bytes, bytes.size() - written_bytes);
    if (n <= 0) break;
    written_bytes += static_cast<size_t>(n);
  }
  ::close(pipe_ends[1]);
  std::signal(SIGPIPE, previous_handler);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace sam2rt
