#include "image_output.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "core/error.h"
#include "io/jpeg_writer.h"
#include "io/png_writer.h"

namespace sam2rt::cli {

namespace {

constexpr int kJpegQuality = 90;

}  // namespace

ImageFormat image_format_for(const std::string& path, const std::string& flag, bool jpeg_allowed) {
  std::string extension = std::filesystem::path(path).extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (extension == ".png") return ImageFormat::png;
  const bool jpeg = extension == ".jpg" || extension == ".jpeg";
  if (jpeg && jpeg_allowed) return ImageFormat::jpeg;
  if (jpeg) {
    throw Error(flag + " '" + path + "': a mask is written as PNG only (JPEG is lossy and would blur its 0/255 "
                "edges); name it .png");
  }
  const std::string supported = jpeg_allowed ? ".png, .jpg or .jpeg" : ".png";
  throw Error(flag + " '" + path + "': " +
              (extension.empty() ? std::string("no file extension") : "unsupported extension '" + extension + "'") +
              "; name it " + supported);
}

std::vector<uint8_t> encode_rgb8(ImageFormat format, const uint8_t* pixels, int width, int height) {
  if (format == ImageFormat::jpeg) return encode_jpeg_rgb8(pixels, width, height, kJpegQuality);
  return encode_png_rgb8(pixels, width, height);
}

}  // namespace sam2rt::cli
