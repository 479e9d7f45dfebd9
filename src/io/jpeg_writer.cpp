#include "io/jpeg_writer.h"

// jpeglib.h needs size_t and FILE declared before it.
#include <cstddef>
#include <cstdio>

#include <jpeglib.h>

#include <csetjmp>
#include <cstdlib>
#include <string>

#include "core/error.h"

namespace sam2rt {

namespace {

struct JpegErrorManager {
  jpeg_error_mgr base;
  std::jmp_buf landing;
  char message[JMSG_LENGTH_MAX] = {};
};

void on_jpeg_error(j_common_ptr info) {
  auto* manager = reinterpret_cast<JpegErrorManager*>(info->err);
  (*info->err->format_message)(info, manager->message);
  std::longjmp(manager->landing, 1);
}

// The compression steps, in a frame holding nothing with a destructor: libjpeg
// reports errors by longjmp out of it.
bool compress(jpeg_compress_struct& cinfo, JpegErrorManager& errors, const uint8_t* pixels, int width, int height,
              int quality, unsigned char** buffer, unsigned long* size) {
  if (setjmp(errors.landing)) return false;
  jpeg_create_compress(&cinfo);
  jpeg_mem_dest(&cinfo, buffer, size);
  cinfo.image_width = static_cast<JDIMENSION>(width);
  cinfo.image_height = static_cast<JDIMENSION>(height);
  cinfo.input_components = 3;
  cinfo.in_color_space = JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, quality, TRUE);
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(pixels + static_cast<size_t>(cinfo.next_scanline) * width * 3);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  return true;
}

}  // namespace

std::vector<uint8_t> encode_jpeg_rgb8(const uint8_t* pixels, int width, int height, int quality) {
  const std::string what = "cannot encode a " + std::to_string(width) + "x" + std::to_string(height) + " JPEG: ";
  if (width <= 0 || height <= 0 || !pixels) throw Error(what + "empty image");
  if (width > JPEG_MAX_DIMENSION || height > JPEG_MAX_DIMENSION) {
    throw Error(what + "JPEG allows at most " + std::to_string(JPEG_MAX_DIMENSION) + " pixels a side; use .png");
  }
  jpeg_compress_struct cinfo{};
  JpegErrorManager errors;
  cinfo.err = jpeg_std_error(&errors.base);
  errors.base.error_exit = on_jpeg_error;
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  const bool ok = compress(cinfo, errors, pixels, width, height, quality, &buffer, &size);
  jpeg_destroy_compress(&cinfo);
  std::vector<uint8_t> bytes;
  if (ok) bytes.assign(buffer, buffer + size);
  std::free(buffer);
  if (!ok) throw Error(what + errors.message);
  return bytes;
}

}  // namespace sam2rt
