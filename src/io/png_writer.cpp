#include "io/png_writer.h"

#include <png.h>

#include <csetjmp>
#include <cstdio>
#include <new>

#include "core/error.h"
#include "io/atomic_file.h"

namespace sam2rt {

namespace {

struct PngSink {
  std::vector<uint8_t> bytes;
  char error[256] = {};
};

void on_png_error(png_structp png, png_const_charp message) {
  auto* sink = static_cast<PngSink*>(png_get_error_ptr(png));
  std::snprintf(sink->error, sizeof(sink->error), "%s", message);
  png_longjmp(png, 1);
}

void on_png_warning(png_structp, png_const_charp) {}

void append_png_bytes(png_structp png, png_bytep data, size_t length) {
  auto* sink = static_cast<PngSink*>(png_get_io_ptr(png));
  bool stored = true;
  try {
    sink->bytes.insert(sink->bytes.end(), data, data + length);
  } catch (const std::bad_alloc&) {
    stored = false;
  }
  if (!stored) png_error(png, "out of memory");
}

void flush_nothing(png_structp) {}

// libpng reports errors by longjmp; this landing frame holds nothing with a
// destructor and `step` only calls libpng.
template <typename Step>
bool png_guarded(png_structp png, Step&& step) {
  if (setjmp(png_jmpbuf(png))) return false;
  step();
  return true;
}

std::vector<uint8_t> encode_png(const uint8_t* pixels, int width, int height, int channels) {
  const std::string what =
      "cannot encode a " + std::to_string(width) + "x" + std::to_string(height) + " PNG: ";
  if (width <= 0 || height <= 0 || !pixels) throw Error(what + "empty image");
  PngSink sink;
  png_structp png =
      png_create_write_struct(PNG_LIBPNG_VER_STRING, &sink, on_png_error, on_png_warning);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!info) {
    png_destroy_write_struct(&png, nullptr);
    throw Error(what + "out of memory");
  }
  std::vector<png_bytep> rows(height);
  for (int y = 0; y < height; ++y) {
    rows[y] = const_cast<png_bytep>(pixels) + static_cast<size_t>(y) * width * channels;
  }
  const bool ok = png_guarded(png, [&] {
    png_set_write_fn(png, &sink, append_png_bytes, flush_nothing);
    png_set_IHDR(png, info, static_cast<png_uint_32>(width), static_cast<png_uint_32>(height), 8,
                 channels == 1 ? PNG_COLOR_TYPE_GRAY : channels == 3 ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_RGBA, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_set_rows(png, info, rows.data());
    png_write_png(png, info, PNG_TRANSFORM_IDENTITY, nullptr);
  });
  png_destroy_write_struct(&png, &info);
  if (!ok) throw Error(what + sink.error);
  return std::move(sink.bytes);
}

void write_png(const std::string& path, const uint8_t* pixels, int width, int height,
               int channels) {
  std::vector<uint8_t> encoded;
  try {
    encoded = encode_png(pixels, width, height, channels);
  } catch (const Error& e) {
    throw Error("cannot write '" + path + "': " + e.what());
  }
  AtomicFile file(path);
  file.write(encoded.data(), encoded.size());
  file.commit();
}

}  // namespace

std::vector<uint8_t> encode_png_gray8(const uint8_t* pixels, int width, int height) {
  return encode_png(pixels, width, height, 1);
}

std::vector<uint8_t> encode_png_rgb8(const uint8_t* pixels, int width, int height) {
  return encode_png(pixels, width, height, 3);
}

std::vector<uint8_t> encode_png_rgba8(const uint8_t* pixels, int width, int height) {
  return encode_png(pixels, width, height, 4);
}

void write_png_gray8(const std::string& path, const uint8_t* pixels, int width, int height) {
  write_png(path, pixels, width, height, 1);
}

void write_png_rgb8(const std::string& path, const uint8_t* pixels, int width, int height) {
  write_png(path, pixels, width, height, 3);
}

}  // namespace sam2rt
