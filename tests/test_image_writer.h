#pragma once

// Test-only PNG and JPEG encoders (libpng, libjpeg, to memory) with the knobs
// the production writer (io/png_writer.h) lacks: every PNG colour type and bit
// depth, palettes, tRNS and interlacing; JPEG colour spaces, quality,
// progressive scripts and EXIF. Shared by the image-decoder tests, the
// robustness catalogue and the fuzz seed writer, so it does not use GoogleTest:
// a libpng failure throws std::runtime_error, a libjpeg failure exits (libjpeg's
// standard error handler; the test inputs are valid).

// clang-format off
#include <cstdio>  // jpeglib.h needs FILE and size_t first
#include <jpeglib.h>
// clang-format on
#include <png.h>
#include <zlib.h>

#include <csetjmp>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace sam2rt::testing {

using Bytes = std::vector<uint8_t>;

// ---------------------------------------------------------------------------
// PNG

struct PngSpec {
  int width = 0;
  int height = 0;
  int color_type = PNG_COLOR_TYPE_GRAY;
  int bit_depth = 8;
  bool interlaced = false;
  std::vector<int> samples;  // width*height*channels sample values, row-major
  std::vector<png_color> palette;
  std::vector<uint8_t> palette_alpha;  // tRNS for palette images
  bool gray_or_rgb_trns = false;       // a tRNS colour key for gray / RGB images
};

inline int png_channels(int color_type) {
  switch (color_type) {
    case PNG_COLOR_TYPE_GRAY:
    case PNG_COLOR_TYPE_PALETTE:
      return 1;
    case PNG_COLOR_TYPE_GRAY_ALPHA:
      return 2;
    case PNG_COLOR_TYPE_RGB:
      return 3;
    default:
      return 4;
  }
}

// Packs the samples of one row as the PNG format stores them (big-endian
// 16-bit, MSB-first sub-byte samples).
inline Bytes pack_png_row(const PngSpec& spec, int y) {
  const int channels = png_channels(spec.color_type);
  const int count = spec.width * channels;
  Bytes row((static_cast<size_t>(count) * spec.bit_depth + 7) / 8, 0);
  for (int i = 0; i < count; ++i) {
    const int v = spec.samples[static_cast<size_t>(y) * count + i];
    if (spec.bit_depth == 16) {
      row[2 * i] = static_cast<uint8_t>(v >> 8);
      row[2 * i + 1] = static_cast<uint8_t>(v & 255);
    } else if (spec.bit_depth == 8) {
      row[i] = static_cast<uint8_t>(v);
    } else {
      const int per_byte = 8 / spec.bit_depth;
      const int shift = 8 - spec.bit_depth * (i % per_byte + 1);
      row[i / per_byte] |= static_cast<uint8_t>(v << shift);
    }
  }
  return row;
}

// libpng reports errors by longjmp; the message is kept for the exception.
inline void test_png_error(png_structp png, png_const_charp message) {
  static_cast<std::string*>(png_get_error_ptr(png))->assign(message);
  png_longjmp(png, 1);
}

inline void test_png_append(png_structp png, png_bytep data, size_t length) {
  auto* out = static_cast<Bytes*>(png_get_io_ptr(png));
  out->insert(out->end(), data, data + length);
}

inline void test_png_flush(png_structp) {}

inline bool run_png_steps(png_structp png, const std::function<void()>& steps) {
  if (setjmp(png_jmpbuf(png))) return false;
  steps();
  return true;
}

// The image of `spec` from rows already packed as PNG stores them (spec.samples
// is not read).
inline Bytes encode_test_png_rows(const PngSpec& spec, std::vector<Bytes> rows) {
  Bytes out;
  std::string error;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &error, test_png_error, nullptr);
  png_infop info = png_create_info_struct(png);
  std::vector<png_bytep> row_pointers;
  for (auto& row : rows) row_pointers.push_back(row.data());
  png_color_16 key{};
  key.gray = 1;  // valid at every bit depth
  key.red = 1;
  key.green = 1;
  const bool ok = run_png_steps(png, [&] {
    png_set_write_fn(png, &out, test_png_append, test_png_flush);
    png_set_IHDR(png, info, spec.width, spec.height, spec.bit_depth, spec.color_type,
                 spec.interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    if (!spec.palette.empty()) {
      png_set_PLTE(png, info, spec.palette.data(), static_cast<int>(spec.palette.size()));
    }
    if (!spec.palette_alpha.empty()) {
      png_set_tRNS(png, info, spec.palette_alpha.data(),
                   static_cast<int>(spec.palette_alpha.size()), nullptr);
    }
    if (spec.gray_or_rgb_trns) png_set_tRNS(png, info, nullptr, 0, &key);
    png_set_rows(png, info, row_pointers.data());
    png_write_png(png, info, PNG_TRANSFORM_IDENTITY, nullptr);
  });
  png_destroy_write_struct(&png, &info);
  if (!ok) throw std::runtime_error("libpng (test encoder): " + error);
  return out;
}

inline Bytes encode_test_png(const PngSpec& spec) {
  std::vector<Bytes> rows;
  for (int y = 0; y < spec.height; ++y) rows.push_back(pack_png_row(spec, y));
  return encode_test_png_rows(spec, std::move(rows));
}

inline void append_png_chunk(Bytes& png, const std::string& type, const Bytes& data) {
  auto be32 = [&](uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) png.push_back(static_cast<uint8_t>(v >> s));
  };
  be32(static_cast<uint32_t>(data.size()));
  const size_t start = png.size();
  png.insert(png.end(), type.begin(), type.end());
  png.insert(png.end(), data.begin(), data.end());
  be32(static_cast<uint32_t>(crc32(0, &png[start], static_cast<uInt>(png.size() - start))));
}

// A PNG whose IHDR claims the given size (8-bit RGB), with a token IDAT (an
// empty zlib stream): a decompression bomb in miniature.
inline Bytes png_claiming_size(uint32_t width, uint32_t height) {
  Bytes png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  Bytes ihdr;
  for (uint32_t v : {width, height}) {
    for (int s = 24; s >= 0; s -= 8) ihdr.push_back(static_cast<uint8_t>(v >> s));
  }
  ihdr.insert(ihdr.end(), {8, 2, 0, 0, 0});  // 8-bit RGB, deflate, no interlace
  append_png_chunk(png, "IHDR", ihdr);
  append_png_chunk(png, "IDAT", {0x78, 0x9C, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01});
  append_png_chunk(png, "IEND", {});
  return png;
}

// ---------------------------------------------------------------------------
// JPEG

struct JpegSpec {
  int width = 0;
  int height = 0;
  int components = 3;
  J_COLOR_SPACE in_color_space = JCS_RGB;
  J_COLOR_SPACE jpeg_color_space = JCS_YCbCr;
  Bytes pixels;  // width*height*components, as given to libjpeg
  Bytes exif;    // APP1 payload, written right after the JFIF/Adobe header
  int quality = 100;
  bool progressive = false;
  std::vector<jpeg_scan_info> scans;  // a custom progressive script
};

inline Bytes encode_test_jpeg(const JpegSpec& spec) {
  jpeg_compress_struct cinfo{};
  jpeg_error_mgr errors{};
  cinfo.err = jpeg_std_error(&errors);
  jpeg_create_compress(&cinfo);
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&cinfo, &buffer, &size);
  cinfo.image_width = static_cast<JDIMENSION>(spec.width);
  cinfo.image_height = static_cast<JDIMENSION>(spec.height);
  cinfo.input_components = spec.components;
  cinfo.in_color_space = spec.in_color_space;
  jpeg_set_defaults(&cinfo);
  jpeg_set_colorspace(&cinfo, spec.jpeg_color_space);
  jpeg_set_quality(&cinfo, spec.quality, TRUE);
  if (spec.progressive) jpeg_simple_progression(&cinfo);
  if (!spec.scans.empty()) {
    cinfo.scan_info = spec.scans.data();
    cinfo.num_scans = static_cast<int>(spec.scans.size());
  }
  jpeg_start_compress(&cinfo, TRUE);
  if (!spec.exif.empty()) {
    jpeg_write_marker(&cinfo, JPEG_APP0 + 1, spec.exif.data(),
                      static_cast<unsigned int>(spec.exif.size()));
  }
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(
        &spec.pixels[static_cast<size_t>(cinfo.next_scanline) * spec.width * spec.components]);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  Bytes out(buffer, buffer + size);
  std::free(buffer);
  return out;
}

// "Exif\0\0" + a TIFF header + IFD0 holding only the orientation tag.
inline Bytes exif_with_orientation(int orientation, bool big_endian) {
  Bytes b = {'E', 'x', 'i', 'f', 0, 0};
  auto u16 = [&](int v) {
    if (big_endian) {
      b.push_back(static_cast<uint8_t>(v >> 8));
      b.push_back(static_cast<uint8_t>(v));
    } else {
      b.push_back(static_cast<uint8_t>(v));
      b.push_back(static_cast<uint8_t>(v >> 8));
    }
  };
  auto u32 = [&](uint32_t v) {
    if (big_endian) {
      u16(static_cast<int>(v >> 16));
      u16(static_cast<int>(v & 0xFFFF));
    } else {
      u16(static_cast<int>(v & 0xFFFF));
      u16(static_cast<int>(v >> 16));
    }
  };
  b.push_back(big_endian ? 'M' : 'I');
  b.push_back(big_endian ? 'M' : 'I');
  u16(42);
  u32(8);       // IFD0 offset
  u16(1);       // one entry
  u16(0x0112);  // Orientation
  u16(3);       // SHORT
  u32(1);       // count
  u16(orientation);
  u16(0);  // value padding
  u32(0);  // no next IFD
  return b;
}

}  // namespace sam2rt::testing
