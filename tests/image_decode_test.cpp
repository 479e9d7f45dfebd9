#include "io/image.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/png_writer.h"
#include "test_image_writer.h"

namespace sam2rt {
namespace {

using testing::Bytes;
using testing::encode_test_jpeg;
using testing::encode_test_png;
using testing::exif_with_orientation;
using testing::JpegSpec;
using testing::png_channels;
using testing::png_claiming_size;
using testing::PngSpec;

RgbImage decode(const Bytes& bytes, int64_t max_pixels = kDefaultMaxImagePixels) {
  return decode_image_bytes(bytes.data(), bytes.size(), "test", max_pixels);
}

std::string decode_error(const Bytes& bytes, int64_t max_pixels = kDefaultMaxImagePixels) {
  try {
    decode(bytes, max_pixels);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void expect_decode_error(const Bytes& bytes, const std::string& fragment) {
  const std::string message = decode_error(bytes);
  EXPECT_NE(message.find("cannot decode image 'test': "), std::string::npos) << message;
  EXPECT_NE(message.find(fragment), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

// ---------------------------------------------------------------------------
// PNG: every colour type and bit depth, plain and interlaced

std::vector<int> random_samples(size_t count, int max_value, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(0, max_value);
  std::vector<int> samples(count);
  for (int& s : samples) s = dist(rng);
  return samples;
}

// What Pillow 9.4's Image.open(...).convert("RGB") gives for a sample set,
// written from the rules found in its sources (see src/io/image.cpp).
Bytes expected_pillow_rgb(const PngSpec& spec) {
  const int channels = png_channels(spec.color_type);
  const size_t pixels = static_cast<size_t>(spec.width) * spec.height;
  Bytes rgb(pixels * 3);
  for (size_t p = 0; p < pixels; ++p) {
    const int* s = &spec.samples[p * channels];
    int r = 0, g = 0, b = 0;
    if (spec.color_type == PNG_COLOR_TYPE_PALETTE) {
      const int i = s[0];
      if (i < static_cast<int>(spec.palette.size())) {
        r = spec.palette[i].red, g = spec.palette[i].green, b = spec.palette[i].blue;
      } else {
        r = g = b = i;  // Pillow's palette starts as a gray ramp
      }
    } else if (spec.color_type == PNG_COLOR_TYPE_GRAY && spec.bit_depth == 16) {
      r = g = b = std::min(s[0], 255);  // mode "I", convert clips
    } else if (spec.bit_depth == 16) {
      const bool gray = spec.color_type == PNG_COLOR_TYPE_GRAY_ALPHA;
      r = s[0] >> 8, g = s[gray ? 0 : 1] >> 8, b = s[gray ? 0 : 2] >> 8;  // high byte
    } else if (spec.bit_depth < 8) {
      r = g = b = s[0] * 255 / ((1 << spec.bit_depth) - 1);
    } else if (spec.color_type == PNG_COLOR_TYPE_GRAY ||
               spec.color_type == PNG_COLOR_TYPE_GRAY_ALPHA) {
      r = g = b = s[0];
    } else {
      r = s[0], g = s[1], b = s[2];
    }
    rgb[3 * p] = static_cast<uint8_t>(r);
    rgb[3 * p + 1] = static_cast<uint8_t>(g);
    rgb[3 * p + 2] = static_cast<uint8_t>(b);
  }
  return rgb;
}

struct PngCase {
  int color_type;
  int bit_depth;
};

TEST(ImageDecode, PngAllColorTypesAndBitDepths) {
  const PngCase cases[] = {
      {PNG_COLOR_TYPE_GRAY, 1},        {PNG_COLOR_TYPE_GRAY, 2},
      {PNG_COLOR_TYPE_GRAY, 4},        {PNG_COLOR_TYPE_GRAY, 8},
      {PNG_COLOR_TYPE_GRAY, 16},       {PNG_COLOR_TYPE_RGB, 8},
      {PNG_COLOR_TYPE_RGB, 16},        {PNG_COLOR_TYPE_PALETTE, 1},
      {PNG_COLOR_TYPE_PALETTE, 2},     {PNG_COLOR_TYPE_PALETTE, 4},
      {PNG_COLOR_TYPE_PALETTE, 8},     {PNG_COLOR_TYPE_GRAY_ALPHA, 8},
      {PNG_COLOR_TYPE_GRAY_ALPHA, 16}, {PNG_COLOR_TYPE_RGB_ALPHA, 8},
      {PNG_COLOR_TYPE_RGB_ALPHA, 16},
  };
  uint32_t seed = 1;
  for (const PngCase& c : cases) {
    for (bool interlaced : {false, true}) {
      SCOPED_TRACE("color_type " + std::to_string(c.color_type) + " bit_depth " +
                   std::to_string(c.bit_depth) + (interlaced ? " interlaced" : ""));
      PngSpec spec;
      spec.width = 13;  // odd sizes so every Adam7 pass is partial
      spec.height = 11;
      spec.color_type = c.color_type;
      spec.bit_depth = c.bit_depth;
      spec.interlaced = interlaced;
      const size_t count =
          static_cast<size_t>(spec.width) * spec.height * png_channels(c.color_type);
      if (c.color_type == PNG_COLOR_TYPE_PALETTE) {
        const int entries = 1 << c.bit_depth;
        spec.samples = random_samples(count, entries - 1, seed++);
        std::mt19937 rng(seed++);
        for (int i = 0; i < entries; ++i) {
          spec.palette.push_back({static_cast<png_byte>(rng()), static_cast<png_byte>(rng()),
                                  static_cast<png_byte>(rng())});
          spec.palette_alpha.push_back(static_cast<uint8_t>(i * 37));  // alpha is dropped
        }
      } else {
        spec.samples = random_samples(count, (1 << c.bit_depth) - 1, seed++);
        if (c.bit_depth == 16) {
          // Make sure both the clip (gray) and the high byte (colour) are exercised
          // with small values too.
          for (size_t i = 0; i < count; i += 3) spec.samples[i] %= 300;
        }
        spec.gray_or_rgb_trns =
            c.color_type == PNG_COLOR_TYPE_GRAY || c.color_type == PNG_COLOR_TYPE_RGB;
      }
      const RgbImage image = decode(encode_test_png(spec));
      ASSERT_EQ(image.width, spec.width);
      ASSERT_EQ(image.height, spec.height);
      EXPECT_EQ(image.pixels, expected_pillow_rgb(spec));
    }
  }
}

TEST(ImageDecode, Png16BitGrayClipsAndColorKeepsHighByte) {
  PngSpec gray;
  gray.width = 4;
  gray.height = 1;
  gray.bit_depth = 16;
  gray.samples = {0, 255, 256, 65535};
  const RgbImage g = decode(encode_test_png(gray));
  EXPECT_EQ(g.pixels, (Bytes{0, 0, 0, 255, 255, 255, 255, 255, 255, 255, 255, 255}));

  PngSpec rgb;
  rgb.width = 1;
  rgb.height = 1;
  rgb.color_type = PNG_COLOR_TYPE_RGB;
  rgb.bit_depth = 16;
  rgb.samples = {0x12FF, 0x00FF, 0xFF00};
  EXPECT_EQ(decode(encode_test_png(rgb)).pixels, (Bytes{0x12, 0x00, 0xFF}));
}

TEST(ImageDecode, PngPaletteIndexBeyondPlteIsGrayRamp) {
  PngSpec spec;
  spec.width = 3;
  spec.height = 1;
  spec.color_type = PNG_COLOR_TYPE_PALETTE;
  spec.samples = {0, 1, 200};
  spec.palette = {{10, 20, 30}, {40, 50, 60}};
  EXPECT_EQ(decode(encode_test_png(spec)).pixels, (Bytes{10, 20, 30, 40, 50, 60, 200, 200, 200}));
}

TEST(ImageDecode, OneByNImagesWork) {
  PngSpec png;
  png.width = 1;
  png.height = 37;
  png.samples = random_samples(37, 255, 7);
  const RgbImage tall = decode(encode_test_png(png));
  EXPECT_EQ(tall.width, 1);
  EXPECT_EQ(tall.height, 37);
  EXPECT_EQ(tall.pixels, expected_pillow_rgb(png));

  JpegSpec jpeg;
  jpeg.width = 37;
  jpeg.height = 1;
  jpeg.components = 1;
  jpeg.in_color_space = JCS_GRAYSCALE;
  jpeg.jpeg_color_space = JCS_GRAYSCALE;
  jpeg.pixels.assign(37, 99);
  const RgbImage wide = decode(encode_test_jpeg(jpeg));
  EXPECT_EQ(wide.width, 37);
  EXPECT_EQ(wide.height, 1);
  EXPECT_EQ(wide.pixels, Bytes(37 * 3, 99));
}

// ---------------------------------------------------------------------------
// JPEG colour spaces and EXIF orientation

TEST(ImageDecode, JpegGrayIsReplicated) {
  JpegSpec spec;
  spec.width = 16;
  spec.height = 16;
  spec.components = 1;
  spec.in_color_space = JCS_GRAYSCALE;
  spec.jpeg_color_space = JCS_GRAYSCALE;
  spec.pixels.assign(256, 77);
  const RgbImage image = decode(encode_test_jpeg(spec));
  EXPECT_EQ(image.pixels, Bytes(256 * 3, 77));
}

TEST(ImageDecode, JpegYCbCrBecomesRgb) {
  JpegSpec spec;
  spec.width = 16;
  spec.height = 16;
  for (int i = 0; i < 256; ++i) spec.pixels.insert(spec.pixels.end(), {200, 30, 90});
  const RgbImage image = decode(encode_test_jpeg(spec));
  ASSERT_EQ(image.pixels.size(), spec.pixels.size());
  for (size_t i = 0; i < image.pixels.size(); ++i) {
    ASSERT_NEAR(image.pixels[i], spec.pixels[i], 2) << i;  // YCbCr rounding only
  }
}

// Stored CMYK bytes are Adobe-inverted; Pillow's result is K' * C' / 255.
TEST(ImageDecode, JpegCmykAndYcckAreAdobeInverted) {
  for (J_COLOR_SPACE stored : {JCS_CMYK, JCS_YCCK}) {
    SCOPED_TRACE(stored == JCS_CMYK ? "CMYK" : "YCCK");
    JpegSpec spec;
    spec.width = 16;
    spec.height = 16;
    spec.components = 4;
    spec.in_color_space = JCS_CMYK;
    spec.jpeg_color_space = stored;
    for (int i = 0; i < 256; ++i) spec.pixels.insert(spec.pixels.end(), {255, 128, 0, 200});
    const RgbImage image = decode(encode_test_jpeg(spec));
    const int expected[3] = {200, 100, 0};  // 200*255/255, 200*128/255, 0
    for (size_t i = 0; i < image.pixels.size(); ++i) {
      ASSERT_NEAR(image.pixels[i], expected[i % 3], 2) << i;
    }
  }
}

// The display transform for each EXIF orientation, built from a clockwise
// rotation and a left-right mirror (EXIF 2.3 definitions), independently of
// the decoder's direct index formulas.
RgbImage rotate_clockwise(const RgbImage& in) {
  RgbImage out{in.height, in.width, Bytes(in.pixels.size())};
  for (int y = 0; y < in.height; ++y) {
    for (int x = 0; x < in.width; ++x) {
      // Input row y becomes output column (height - 1 - y).
      const int ox = in.height - 1 - y, oy = x;
      std::memcpy(&out.pixels[(static_cast<size_t>(oy) * out.width + ox) * 3],
                  &in.pixels[(static_cast<size_t>(y) * in.width + x) * 3], 3);
    }
  }
  return out;
}

RgbImage mirror_left_right(const RgbImage& in) {
  RgbImage out = in;
  for (int y = 0; y < in.height; ++y) {
    for (int x = 0; x < in.width; ++x) {
      std::memcpy(&out.pixels[(static_cast<size_t>(y) * in.width + (in.width - 1 - x)) * 3],
                  &in.pixels[(static_cast<size_t>(y) * in.width + x) * 3], 3);
    }
  }
  return out;
}

RgbImage displayed(const RgbImage& stored, int orientation) {
  const bool mirrored =
      orientation == 2 || orientation == 4 || orientation == 5 || orientation == 7;
  const int clockwise_turns[9] = {0, 0, 0, 2, 2, 3, 1, 1, 3};
  RgbImage image = mirrored ? mirror_left_right(stored) : stored;
  for (int i = 0; i < clockwise_turns[orientation]; ++i) image = rotate_clockwise(image);
  return image;
}

TEST(ImageDecode, JpegExifOrientationAllEight) {
  JpegSpec spec;
  spec.width = 24;
  spec.height = 16;
  spec.components = 1;
  spec.in_color_space = JCS_GRAYSCALE;
  spec.jpeg_color_space = JCS_GRAYSCALE;
  for (int y = 0; y < spec.height; ++y) {
    for (int x = 0; x < spec.width; ++x) spec.pixels.push_back(static_cast<uint8_t>(x * 10 + y));
  }
  const RgbImage stored = decode(encode_test_jpeg(spec));
  for (int orientation = 1; orientation <= 8; ++orientation) {
    for (bool big_endian : {true, false}) {
      SCOPED_TRACE("orientation " + std::to_string(orientation) + (big_endian ? " MM" : " II"));
      spec.exif = exif_with_orientation(orientation, big_endian);
      const RgbImage image = decode(encode_test_jpeg(spec));
      const RgbImage expected = displayed(stored, orientation);
      EXPECT_EQ(image.width, expected.width);
      EXPECT_EQ(image.height, expected.height);
      EXPECT_EQ(image.pixels, expected.pixels);
    }
  }
  // Orientation 6 on a 24x16 image: the stored left column becomes the top row.
  spec.exif = exif_with_orientation(6, true);
  const RgbImage rotated = decode(encode_test_jpeg(spec));
  ASSERT_EQ(rotated.width, 16);
  ASSERT_EQ(rotated.height, 24);
  for (int x = 0; x < 16; ++x) {
    EXPECT_EQ(rotated.pixels[3 * x], stored.pixels[3 * (static_cast<size_t>(15 - x) * 24)]) << x;
  }
  // Out-of-range orientations are ignored.
  spec.exif = exif_with_orientation(9, true);
  EXPECT_EQ(decode(encode_test_jpeg(spec)).pixels, stored.pixels);
}

TEST(ImageDecode, JpegProgressiveMatchesBaseline) {
  JpegSpec spec;
  spec.width = 40;
  spec.height = 24;
  spec.quality = 90;
  std::mt19937 rng(8);
  for (int i = 0; i < spec.width * spec.height * 3; ++i)
    spec.pixels.push_back(static_cast<uint8_t>(rng()));
  const RgbImage baseline = decode(encode_test_jpeg(spec));
  spec.progressive = true;
  // Same coefficients, only a different entropy-coding order.
  EXPECT_EQ(decode(encode_test_jpeg(spec)).pixels, baseline.pixels);
}

// 1 DC scan + 63 single-coefficient AC bands x (first pass + 8 refinements) =
// 568 scans, a valid file that libjpeg would spend long on if it were larger.
TEST(ImageDecode, RejectsJpegWithTooManyScans) {
  JpegSpec spec;
  spec.width = 8;
  spec.height = 8;
  spec.components = 1;
  spec.in_color_space = JCS_GRAYSCALE;
  spec.jpeg_color_space = JCS_GRAYSCALE;
  spec.pixels.assign(64, 128);
  spec.scans.push_back({1, {0, 0, 0, 0}, 0, 0, 0, 0});
  for (int k = 1; k < 64; ++k) {
    spec.scans.push_back({1, {0, 0, 0, 0}, k, k, 0, 8});
    for (int ah = 8; ah >= 1; --ah) spec.scans.push_back({1, {0, 0, 0, 0}, k, k, ah, ah - 1});
  }
  expect_decode_error(encode_test_jpeg(spec), "more than 500 progressive scans");
}

// ---------------------------------------------------------------------------
// Bad inputs

Bytes valid_png(int width, int height) {
  PngSpec spec;
  spec.width = width;
  spec.height = height;
  spec.color_type = PNG_COLOR_TYPE_RGB;
  spec.samples = random_samples(static_cast<size_t>(width) * height * 3, 255, 11);
  return encode_test_png(spec);
}

Bytes noisy_jpeg(int width, int height) {
  JpegSpec spec;
  spec.width = width;
  spec.height = height;
  std::mt19937 rng(5);
  for (int i = 0; i < width * height * 3; ++i) spec.pixels.push_back(static_cast<uint8_t>(rng()));
  return encode_test_jpeg(spec);
}

TEST(ImageDecode, RejectsEmptyAndUnknownData) {
  expect_decode_error({}, "empty");
  std::mt19937 rng(3);
  Bytes noise(4096);
  for (auto& b : noise) b = static_cast<uint8_t>(rng());
  noise[0] = 0x00;
  expect_decode_error(noise, "not a PNG or JPEG");
}

TEST(ImageDecode, RejectsGarbageAfterSignatures) {
  std::mt19937 rng(4);
  Bytes png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  Bytes jpeg = {0xFF, 0xD8, 0xFF};
  for (int i = 0; i < 2000; ++i) {
    png.push_back(static_cast<uint8_t>(rng()));
    jpeg.push_back(static_cast<uint8_t>(rng()));
  }
  expect_decode_error(png, "");
  expect_decode_error(jpeg, "");
}

TEST(ImageDecode, RejectsTruncatedFiles) {
  const Bytes png = valid_png(64, 64);
  ASSERT_NO_THROW(decode(png));
  for (size_t keep : {size_t{20}, size_t{60}, png.size() / 2, png.size() - 13}) {
    SCOPED_TRACE("png kept " + std::to_string(keep));
    expect_decode_error(Bytes(png.begin(), png.begin() + keep), "");
  }
  const Bytes jpeg = noisy_jpeg(64, 64);
  ASSERT_NO_THROW(decode(jpeg));
  for (size_t keep : {size_t{100}, jpeg.size() / 2, jpeg.size() - 200}) {
    SCOPED_TRACE("jpeg kept " + std::to_string(keep));
    expect_decode_error(Bytes(jpeg.begin(), jpeg.begin() + keep), "");
  }
  // Cut inside the entropy-coded data: libjpeg alone would pad with gray.
  expect_decode_error(Bytes(jpeg.begin(), jpeg.begin() + jpeg.size() / 2), "Premature end");
}

// Flipped and truncated bytes must either decode to an image of the stated
// size or throw Error; anything else (a crash, another exception type, a
// sanitizer report) fails.
TEST(ImageDecode, SurvivesCorruptedBytes) {
  std::mt19937 rng(12);
  for (const Bytes& valid : {valid_png(48, 40), noisy_jpeg(48, 40)}) {
    for (int trial = 0; trial < 300; ++trial) {
      Bytes bytes = valid;
      const int flips = 1 + trial % 8;
      for (int f = 0; f < flips; ++f) {
        // Keep the signature so the decoders, not the format check, see the damage.
        bytes[8 + rng() % (bytes.size() - 8)] = static_cast<uint8_t>(rng());
      }
      if (trial % 5 == 0) bytes.resize(8 + rng() % (bytes.size() - 8));
      try {
        const RgbImage image = decode(bytes);
        ASSERT_EQ(image.pixels.size(), static_cast<size_t>(image.width) * image.height * 3);
      } catch (const Error& e) {
        ASSERT_EQ(std::string(e.what()).rfind("cannot decode image 'test': ", 0), 0u) << e.what();
      }
    }
  }
}

TEST(ImageDecode, RefusesDecompressionBombFromHeader) {
  const Bytes png = png_claiming_size(100000, 100000);
  const auto start = std::chrono::steady_clock::now();
  expect_decode_error(png, "100000x100000 = 10000000000 pixels exceeds the limit of 100000000");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 0.5);

  // JPEG: patch the SOF0 size of a small file to 60000x60000.
  Bytes jpeg = noisy_jpeg(16, 16);
  bool patched = false;
  for (size_t i = 0; i + 9 < jpeg.size(); ++i) {
    if (jpeg[i] == 0xFF && jpeg[i + 1] == 0xC0) {
      jpeg[i + 5] = 0xEA, jpeg[i + 6] = 0x60, jpeg[i + 7] = 0xEA, jpeg[i + 8] = 0x60;
      patched = true;
      break;
    }
  }
  ASSERT_TRUE(patched);
  expect_decode_error(jpeg, "60000x60000 = 3600000000 pixels exceeds the limit");
}

TEST(ImageDecode, PixelLimitIsInclusive) {
  const Bytes png = valid_png(64, 64);
  EXPECT_NO_THROW(decode(png, 64 * 64));
  EXPECT_NE(decode_error(png, 64 * 64 - 1).find("exceeds the limit of 4095 pixels"),
            std::string::npos);
  const Bytes jpeg = noisy_jpeg(16, 16);
  EXPECT_NO_THROW(decode(jpeg, 256));
  EXPECT_NE(decode_error(jpeg, 255).find("exceeds the limit"), std::string::npos);
}

TEST(ImageDecode, RejectsZeroSizedHeader) {
  expect_decode_error(png_claiming_size(0, 0), "");
  expect_decode_error(png_claiming_size(0, 5), "");
  Bytes jpeg = noisy_jpeg(16, 16);
  for (size_t i = 0; i + 9 < jpeg.size(); ++i) {
    if (jpeg[i] == 0xFF && jpeg[i + 1] == 0xC0) {
      jpeg[i + 5] = jpeg[i + 6] = 0;  // height 0
      break;
    }
  }
  expect_decode_error(jpeg, "");
}

TEST(ImageDecode, FileErrorsNameThePath) {
  const std::string dir = ::testing::TempDir();
  const std::string missing = dir + "/sam2rt_no_such_image.png";
  try {
    decode_image_file(missing);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
  }
  const std::string empty = dir + "/sam2rt_empty_image.png";
  { std::ofstream(empty, std::ios::binary); }
  try {
    decode_image_file(empty);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "cannot decode image '" + empty + "': the file is empty");
  }
  std::filesystem::remove(empty);
}

// ---------------------------------------------------------------------------
// PNG writer round trip (suite name keeps it under the ImageDecode* filter)

TEST(ImageDecodePngWriter, Gray8RoundTrip) {
  const int width = 37, height = 5;
  Bytes gray(static_cast<size_t>(width) * height);
  for (size_t i = 0; i < gray.size(); ++i) gray[i] = static_cast<uint8_t>(i * 7);
  const std::string path = ::testing::TempDir() + "/sam2rt_gray_round_trip.png";
  write_png_gray8(path, gray.data(), width, height);
  const RgbImage file_image = decode_image_file(path);
  const Bytes encoded = encode_png_gray8(gray.data(), width, height);
  const RgbImage memory_image = decode(encoded);
  std::filesystem::remove(path);
  ASSERT_EQ(file_image.width, width);
  ASSERT_EQ(file_image.height, height);
  for (size_t i = 0; i < gray.size(); ++i) {
    ASSERT_EQ(file_image.pixels[3 * i], gray[i]);
    ASSERT_EQ(file_image.pixels[3 * i + 1], gray[i]);
    ASSERT_EQ(file_image.pixels[3 * i + 2], gray[i]);
  }
  EXPECT_EQ(memory_image.pixels, file_image.pixels);
}

TEST(ImageDecodePngWriter, Rgb8RoundTrip) {
  const int width = 19, height = 23;
  Bytes rgb(static_cast<size_t>(width) * height * 3);
  std::mt19937 rng(9);
  for (auto& b : rgb) b = static_cast<uint8_t>(rng());
  const std::string path = ::testing::TempDir() + "/sam2rt_rgb_round_trip.png";
  write_png_rgb8(path, rgb.data(), width, height);
  const RgbImage image = decode_image_file(path);
  std::filesystem::remove(path);
  EXPECT_EQ(image.width, width);
  EXPECT_EQ(image.height, height);
  EXPECT_EQ(image.pixels, rgb);
  EXPECT_EQ(decode(encode_png_rgb8(rgb.data(), width, height)).pixels, rgb);
}

TEST(ImageDecodePngWriter, FailuresThrowAndKeepOldFile) {
  const std::string dir = ::testing::TempDir() + "/sam2rt_png_writer_test";
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/mask.png";
  const uint8_t pixel = 255;
  write_png_gray8(path, &pixel, 1, 1);
  const auto before = std::filesystem::file_size(path);
  EXPECT_THROW(write_png_gray8(path, &pixel, 0, 1), Error);
  EXPECT_EQ(std::filesystem::file_size(path), before);
  EXPECT_THROW(write_png_gray8(dir + "/missing_dir/mask.png", &pixel, 1, 1), Error);
  int entries = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir)) ++entries;
  EXPECT_EQ(entries, 1);  // no temporary left behind
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sam2rt
