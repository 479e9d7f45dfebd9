#include "io/image.h"

// clang-format off
#include <cstdio>  // jpeglib.h needs FILE and size_t first
#include <jpeglib.h>
#include <jerror.h>
// clang-format on
#include <libexif/exif-data.h>
#include <png.h>

#include <algorithm>
#include <array>
#include <csetjmp>
#include <cstring>

#include "core/error.h"
#include "io/image_too_large.h"
#include "io/mapped_file.h"
#include "io/printable_text.h"

// Pixel semantics follow Pillow 9.4 (checked against its sources at tag 9.4.0):
// * PNG modes (PngImagePlugin._MODES): gray 1/2/4-bit -> "1"/"L" scaled to
//   0..255 (what libpng's gray expansion does); 16-bit gray -> mode "I", whose
//   convert("RGB") clips (i2rgb: v >= 255 -> 255), it does NOT take the high
//   byte; 16-bit RGB/RGBA/gray+alpha use the "*;16B" unpackers, which keep the
//   most significant byte; palette -> "P", convert("RGB") looks indices up in a
//   256-entry palette whose entries beyond PLTE stay the initial gray ramp
//   (ImagingPaletteNew); tRNS and alpha are ignored by convert("RGB").
// * JPEG: 1 component -> L, 3 -> RGB (libjpeg colour conversion), 4 -> CMYK
//   always read as Adobe-inverted ("CMYK;I"), then cmyk2rgb with MULDIV255.
//   libjpeg's default DCT and fancy upsampling, as Pillow (no draft mode).
// * ImageOps.exif_transpose: orientation tag 0x0112 of IFD0 in the first APP1
//   segment that starts with "Exif\0".

namespace sam2rt {

namespace {

[[noreturn]] void fail(const std::string& origin, const std::string& reason) {
  // libpng and libjpeg messages may quote bytes of the file.
  throw Error("cannot decode image '" + origin + "': " + printable(reason, 400));
}

void check_size(int64_t width, int64_t height, int64_t max_pixels, const std::string& origin) {
  const std::string size = std::to_string(width) + "x" + std::to_string(height);
  if (width <= 0 || height <= 0) fail(origin, "the header gives an empty size " + size);
  if (width * height > max_pixels) {
    throw ImageTooLarge("cannot decode image '" + origin + "': " + size + " = " + std::to_string(width * height) +
                        " pixels exceeds the limit of " + std::to_string(max_pixels) +
                        " pixels (decompression bomb?); raise the pixel limit only for trusted images");
  }
}

// ---------------------------------------------------------------------------
// PNG

struct PngSource {
  const uint8_t* data = nullptr;
  size_t size = 0;
  size_t offset = 0;
  char error[256] = {};
};

void on_png_error(png_structp png, png_const_charp message) {
  auto* source = static_cast<PngSource*>(png_get_error_ptr(png));
  std::snprintf(source->error, sizeof(source->error), "%s", message);
  png_longjmp(png, 1);
}

// Warnings concern ancillary chunks (bad CRC, odd sRGB profiles) that do not
// change the pixels; Pillow ignores them as well.
void on_png_warning(png_structp, png_const_charp) {}

void read_png_bytes(png_structp png, png_bytep out, size_t length) {
  auto* source = static_cast<PngSource*>(png_get_io_ptr(png));
  if (length > source->size - source->offset) png_error(png, "unexpected end of file (truncated)");
  std::memcpy(out, source->data + source->offset, length);
  source->offset += length;
}

// libpng reports errors by longjmp. This frame is the landing site and holds
// nothing with a destructor, and `step` must only call libpng, so the jump
// skips no C++ cleanup.
template <typename Step>
bool png_guarded(png_structp png, Step&& step) {
  if (setjmp(png_jmpbuf(png))) return false;
  step();
  return true;
}

class PngReader {
 public:
  explicit PngReader(PngSource& source) {
    png_ = png_create_read_struct(PNG_LIBPNG_VER_STRING, &source, on_png_error, on_png_warning);
    if (png_) info_ = png_create_info_struct(png_);
  }
  ~PngReader() { png_destroy_read_struct(&png_, &info_, nullptr); }
  PngReader(const PngReader&) = delete;
  PngReader& operator=(const PngReader&) = delete;

  bool ok() const { return png_ && info_; }
  png_structp png() { return png_; }
  png_infop info() { return info_; }

 private:
  png_structp png_ = nullptr;
  png_infop info_ = nullptr;
};

struct PngLayout {
  int color_type = 0;
  int bit_depth = 0;  // after the expansion of 1/2/4-bit samples: 8 or 16
  std::array<uint8_t, 256 * 3> palette{};
};

// One decoded row (as libpng delivers it after the transforms set up in
// decode_png) to RGB, the way Pillow's unpacker + convert("RGB") do.
void png_row_to_rgb(const uint8_t* in, uint8_t* out, int width, const PngLayout& layout) {
  const int sample_bytes = layout.bit_depth == 16 ? 2 : 1;
  switch (layout.color_type) {
    case PNG_COLOR_TYPE_PALETTE:
      for (int x = 0; x < width; ++x) std::memcpy(out + 3 * x, &layout.palette[3 * in[x]], 3);
      return;
    case PNG_COLOR_TYPE_GRAY:
      for (int x = 0; x < width; ++x) {
        const int value =
            sample_bytes == 2 ? std::min((in[2 * x] << 8) | in[2 * x + 1], 255) : in[x];
        out[3 * x] = out[3 * x + 1] = out[3 * x + 2] = static_cast<uint8_t>(value);
      }
      return;
    case PNG_COLOR_TYPE_GRAY_ALPHA:
      for (int x = 0; x < width; ++x) {
        out[3 * x] = out[3 * x + 1] = out[3 * x + 2] = in[2 * sample_bytes * x];
      }
      return;
    default: {  // RGB or RGBA: the first (most significant) byte of R, G, B
      const int pixel_bytes = (layout.color_type == PNG_COLOR_TYPE_RGB ? 3 : 4) * sample_bytes;
      for (int x = 0; x < width; ++x) {
        for (int c = 0; c < 3; ++c) out[3 * x + c] = in[pixel_bytes * x + sample_bytes * c];
      }
      return;
    }
  }
}

RgbImage decode_png(const uint8_t* data, size_t size, const std::string& origin,
                    int64_t max_pixels) {
  PngSource source;
  source.data = data;
  source.size = size;
  PngReader reader(source);
  if (!reader.ok()) fail(origin, "out of memory");
  png_structp png = reader.png();
  png_infop info = reader.info();
  png_set_read_fn(png, &source, read_png_bytes);

  png_uint_32 width = 0, height = 0;
  int bit_depth = 0, color_type = 0, interlace = 0;
  if (!png_guarded(png, [&] {
        png_read_info(png, info);
        png_get_IHDR(png, info, &width, &height, &bit_depth, &color_type, &interlace, nullptr,
                     nullptr);
      })) {
    fail(origin, source.error);
  }
  check_size(width, height, max_pixels, origin);

  PngLayout layout;
  layout.color_type = color_type;
  layout.bit_depth = std::max(bit_depth, 8);
  if (color_type == PNG_COLOR_TYPE_PALETTE) {
    for (int i = 0; i < 256; ++i) std::fill_n(&layout.palette[3 * i], 3, static_cast<uint8_t>(i));
    png_colorp entries = nullptr;
    int count = 0;
    if (png_get_PLTE(png, info, &entries, &count) == 0) fail(origin, "palette image without PLTE");
    for (int i = 0; i < std::min(count, 256); ++i) {
      layout.palette[3 * i] = entries[i].red;
      layout.palette[3 * i + 1] = entries[i].green;
      layout.palette[3 * i + 2] = entries[i].blue;
    }
  }

  int passes = 1;
  size_t row_bytes = 0;
  if (!png_guarded(png, [&] {
        if (bit_depth < 8 && color_type == PNG_COLOR_TYPE_GRAY) png_set_expand_gray_1_2_4_to_8(png);
        if (bit_depth < 8 && color_type == PNG_COLOR_TYPE_PALETTE) png_set_packing(png);
        passes = png_set_interlace_handling(png);
        png_read_update_info(png, info);
        row_bytes = png_get_rowbytes(png, info);
      })) {
    fail(origin, source.error);
  }

  // png_row_to_rgb reads exactly this many bytes per row.
  const int channels = color_type == PNG_COLOR_TYPE_GRAY_ALPHA  ? 2
                       : color_type == PNG_COLOR_TYPE_RGB       ? 3
                       : color_type == PNG_COLOR_TYPE_RGB_ALPHA ? 4
                                                                : 1;
  if (row_bytes != static_cast<size_t>(width) * channels * (layout.bit_depth / 8)) {
    fail(origin, "unexpected PNG row layout (color type " + std::to_string(color_type) +
                     ", bit depth " + std::to_string(bit_depth) + ")");
  }

  RgbImage image;
  image.width = static_cast<int>(width);
  image.height = static_cast<int>(height);
  image.pixels.resize(static_cast<size_t>(width) * height * 3);
  const size_t rgb_row_bytes = static_cast<size_t>(width) * 3;
  if (passes == 1) {
    std::vector<uint8_t> row(row_bytes);
    for (png_uint_32 y = 0; y < height; ++y) {
      if (!png_guarded(png, [&] { png_read_row(png, row.data(), nullptr); })) {
        fail(origin, source.error);
      }
      png_row_to_rgb(row.data(), image.pixels.data() + y * rgb_row_bytes, image.width, layout);
    }
  } else {
    // Interlaced passes revisit every row, so the whole raw image is needed.
    std::vector<uint8_t> raw(row_bytes * height);
    std::vector<png_bytep> rows(height);
    for (png_uint_32 y = 0; y < height; ++y) rows[y] = raw.data() + y * row_bytes;
    if (!png_guarded(png, [&] { png_read_image(png, rows.data()); })) fail(origin, source.error);
    for (png_uint_32 y = 0; y < height; ++y) {
      png_row_to_rgb(rows[y], image.pixels.data() + y * rgb_row_bytes, image.width, layout);
    }
  }
  // Like Pillow, the chunks after the image data (up to IEND) are not required.
  return image;
}

// ---------------------------------------------------------------------------
// JPEG

struct JpegErrorManager {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

[[noreturn]] void on_jpeg_error(j_common_ptr cinfo) {
  auto* manager = reinterpret_cast<JpegErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, manager->message);
  std::longjmp(manager->jump, 1);
}

// libjpeg only warns about a premature end and pads the image with gray;
// Pillow refuses truncated files, so that warning is an error here. Other
// warnings (e.g. extraneous bytes before a marker) are decoded through, as in
// Pillow.
void on_jpeg_message(j_common_ptr cinfo, int level) {
  if (level == -1 && cinfo->err->msg_code == JWRN_JPEG_EOF) on_jpeg_error(cinfo);
}

void ignore_jpeg_output(j_common_ptr) {}

// A crafted progressive file can hold thousands of tiny scans and keep the
// decoder busy for minutes; real encoders write about ten. libjpeg-turbo's own
// tools stop at 500 (djpeg -maxscan, TJFLAG_LIMITSCANS).
constexpr int kMaxJpegScans = 500;

void limit_jpeg_scans(j_common_ptr cinfo) {
  const auto* decompress = reinterpret_cast<j_decompress_ptr>(cinfo);
  if (decompress->input_scan_number > kMaxJpegScans) {
    auto* manager = reinterpret_cast<JpegErrorManager*>(cinfo->err);
    std::snprintf(manager->message, sizeof(manager->message),
                  "more than %d progressive scans (malformed or hostile file)", kMaxJpegScans);
    std::longjmp(manager->jump, 1);
  }
}

template <typename Step>
bool jpeg_guarded(JpegErrorManager& errors, Step&& step) {
  if (setjmp(errors.jump)) return false;
  step();
  return true;
}

class JpegReader {
 public:
  JpegReader() {
    cinfo.err = jpeg_std_error(&errors.pub);
    errors.pub.error_exit = on_jpeg_error;
    errors.pub.emit_message = on_jpeg_message;
    errors.pub.output_message = ignore_jpeg_output;
    progress.progress_monitor = limit_jpeg_scans;
  }
  ~JpegReader() {
    if (created) jpeg_destroy_decompress(&cinfo);
  }
  JpegReader(const JpegReader&) = delete;
  JpegReader& operator=(const JpegReader&) = delete;

  jpeg_decompress_struct cinfo{};
  JpegErrorManager errors{};
  jpeg_progress_mgr progress{};
  bool created = false;
};

// Orientation tag of IFD0, 1 (no change) if absent or unreadable.
int exif_orientation(const uint8_t* app1, size_t size) {
  ExifData* exif = exif_data_new();
  if (!exif) return 1;
  // Following the specification would let libexif add or "fix" tags.
  exif_data_unset_option(exif, EXIF_DATA_OPTION_FOLLOW_SPECIFICATION);
  exif_data_load_data(exif, app1, static_cast<unsigned int>(size));
  int orientation = 1;
  const ExifEntry* entry = exif_content_get_entry(exif->ifd[EXIF_IFD_0], EXIF_TAG_ORIENTATION);
  if (entry && entry->components == 1) {
    const ExifByteOrder order = exif_data_get_byte_order(exif);
    if (entry->format == EXIF_FORMAT_SHORT && entry->size >= 2) {
      orientation = exif_get_short(entry->data, order);
    } else if (entry->format == EXIF_FORMAT_LONG && entry->size >= 4) {
      orientation = static_cast<int>(std::min<ExifLong>(exif_get_long(entry->data, order), 9));
    }
  }
  exif_data_unref(exif);
  return orientation;
}

int jpeg_orientation(const jpeg_decompress_struct& cinfo) {
  for (jpeg_saved_marker_ptr marker = cinfo.marker_list; marker; marker = marker->next) {
    if (marker->marker == JPEG_APP0 + 1 && marker->data_length >= 5 &&
        std::memcmp(marker->data, "Exif\0", 5) == 0) {
      return exif_orientation(marker->data, marker->data_length);
    }
  }
  return 1;
}

// PIL.ImageOps.exif_transpose: orientation 2..8 -> FLIP_LEFT_RIGHT, ROTATE_180,
// FLIP_TOP_BOTTOM, TRANSPOSE, ROTATE_270, TRANSVERSE, ROTATE_90.
RgbImage apply_orientation(RgbImage in, int orientation) {
  if (orientation < 2 || orientation > 8) return in;
  const int w = in.width, h = in.height;
  const bool swaps_axes = orientation >= 5;
  RgbImage out;
  out.width = swaps_axes ? h : w;
  out.height = swaps_axes ? w : h;
  out.pixels.resize(in.pixels.size());
  for (int y = 0; y < out.height; ++y) {
    for (int x = 0; x < out.width; ++x) {
      int sx = x, sy = y;
      switch (orientation) {
        case 2:
          sx = w - 1 - x;
          break;
        case 3:
          sx = w - 1 - x;
          sy = h - 1 - y;
          break;
        case 4:
          sy = h - 1 - y;
          break;
        case 5:
          sx = y;
          sy = x;
          break;
        case 6:
          sx = y;
          sy = h - 1 - x;
          break;
        case 7:
          sx = w - 1 - y;
          sy = h - 1 - x;
          break;
        case 8:
          sx = w - 1 - y;
          sy = x;
          break;
      }
      std::memcpy(&out.pixels[(static_cast<size_t>(y) * out.width + x) * 3],
                  &in.pixels[(static_cast<size_t>(sy) * w + sx) * 3], 3);
    }
  }
  return out;
}

// Pillow reads 4-component JPEGs as Adobe-inverted CMYK ("CMYK;I" flips every
// stored byte), then cmyk2rgb: nk = 255 - K, out = nk - MULDIV255(C, nk).
void cmyk_to_rgb(const uint8_t* stored, uint8_t* rgb) {
  const int nk = 255 - (255 - stored[3]);
  for (int c = 0; c < 3; ++c) {
    const int product = (255 - stored[c]) * nk + 128;
    rgb[c] = static_cast<uint8_t>(std::clamp(nk - (((product >> 8) + product) >> 8), 0, 255));
  }
}

RgbImage decode_jpeg(const uint8_t* data, size_t size, const std::string& origin,
                     int64_t max_pixels, ExifOrientation orientation) {
  JpegReader reader;
  jpeg_decompress_struct& cinfo = reader.cinfo;
  if (!jpeg_guarded(reader.errors, [&] {
        jpeg_create_decompress(&cinfo);
        reader.created = true;
        cinfo.progress = &reader.progress;
        jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
        jpeg_save_markers(&cinfo, JPEG_APP0 + 1, 0xFFFF);
        jpeg_read_header(&cinfo, TRUE);
      })) {
    fail(origin, reader.errors.message);
  }
  const int components = cinfo.num_components;
  if (components != 1 && components != 3 && components != 4) {
    fail(origin, "cannot handle " + std::to_string(components) + "-component JPEG images");
  }
  check_size(cinfo.image_width, cinfo.image_height, max_pixels, origin);
  cinfo.out_color_space = components == 1 ? JCS_GRAYSCALE : components == 3 ? JCS_RGB : JCS_CMYK;

  RgbImage image;
  image.width = static_cast<int>(cinfo.image_width);
  image.height = static_cast<int>(cinfo.image_height);
  image.pixels.resize(static_cast<size_t>(image.width) * image.height * 3);
  std::vector<uint8_t> row(static_cast<size_t>(image.width) * components);
  bool complete = false;
  if (!jpeg_guarded(reader.errors, [&] {
        jpeg_start_decompress(&cinfo);
        if (cinfo.output_width != cinfo.image_width || cinfo.output_height != cinfo.image_height ||
            cinfo.output_components != components) {
          return;
        }
        while (cinfo.output_scanline < cinfo.output_height) {
          uint8_t* out =
              image.pixels.data() + static_cast<size_t>(cinfo.output_scanline) * image.width * 3;
          JSAMPROW rows[1] = {row.data()};
          if (jpeg_read_scanlines(&cinfo, rows, 1) != 1) return;
          for (int x = 0; x < image.width; ++x) {
            if (components == 1) {
              out[3 * x] = out[3 * x + 1] = out[3 * x + 2] = row[x];
            } else if (components == 3) {
              std::memcpy(out + 3 * x, &row[3 * x], 3);
            } else {
              cmyk_to_rgb(&row[4 * x], out + 3 * x);
            }
          }
        }
        complete = true;
      })) {
    fail(origin, reader.errors.message);
  }
  if (!complete) fail(origin, "the decoder stopped before the last row");
  // jpeg_finish_decompress is not called: it would only read the markers after
  // the image data, which the pixels do not depend on.
  if (orientation == ExifOrientation::ignore) return image;
  return apply_orientation(std::move(image), jpeg_orientation(cinfo));
}

}  // namespace

RgbImage decode_image_bytes(const uint8_t* data, size_t size, const std::string& origin,
                            int64_t max_pixels, ExifOrientation orientation) {
  static constexpr uint8_t kPngSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  static constexpr uint8_t kJpegSignature[3] = {0xFF, 0xD8, 0xFF};
  if (size == 0) fail(origin, "the file is empty");
  if (size >= 8 && std::memcmp(data, kPngSignature, 8) == 0) {
    return decode_png(data, size, origin, max_pixels);
  }
  if (size >= 3 && std::memcmp(data, kJpegSignature, 3) == 0) {
    return decode_jpeg(data, size, origin, max_pixels, orientation);
  }
  fail(origin, "not a PNG or JPEG file (unrecognised signature); convert it to PNG or JPEG");
}

RgbImage decode_image_file(const std::string& path, int64_t max_pixels,
                           ExifOrientation orientation) {
  auto file = MappedFile::open(path);
  return decode_image_bytes(file->data(), file->size(), path, max_pixels, orientation);
}

}  // namespace sam2rt
