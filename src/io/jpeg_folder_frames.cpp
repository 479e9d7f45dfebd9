#include "io/jpeg_folder_frames.h"

#include <algorithm>
#include <filesystem>
#include <string_view>
#include <system_error>
#include <utility>

#include "core/error.h"
#include "io/printable_text.h"

namespace sam2rt {

namespace {

// os.path.splitext's extension: from the last dot, provided a character other
// than a dot comes before it (".jpg" and "..jpg" have none).
std::string_view extension_of(std::string_view name) {
  const size_t dot = name.rfind('.');
  if (dot == std::string_view::npos) return {};
  const size_t first_non_dot = name.find_first_not_of('.');
  if (first_non_dot >= dot) return {};
  return name.substr(dot);
}

bool is_official_jpeg_extension(std::string_view extension) {
  return extension == ".jpg" || extension == ".jpeg" || extension == ".JPG" ||
         extension == ".JPEG";
}

// Python's int(text) in base 10, as sign and digits without leading zeros (so
// integers of any length compare exactly); nullopt where int() raises (or the
// digits are not ASCII).
struct FrameNumber;
bool magnitude_less(const FrameNumber& a, const FrameNumber& b);

struct FrameNumber {
  bool negative = false;
  std::string digits;  // "0" for zero, which is never negative

  bool operator<(const FrameNumber& other) const {
    if (negative != other.negative) return negative;
    return negative ? magnitude_less(other, *this) : magnitude_less(*this, other);
  }
  bool operator==(const FrameNumber& other) const = default;
};

bool magnitude_less(const FrameNumber& a, const FrameNumber& b) {
  if (a.digits.size() != b.digits.size()) return a.digits.size() < b.digits.size();
  return a.digits < b.digits;
}

bool is_python_ascii_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

std::optional<FrameNumber> parse_python_int(std::string_view text) {
  while (!text.empty() && is_python_ascii_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_python_ascii_space(text.back())) text.remove_suffix(1);
  FrameNumber number;
  if (!text.empty() && (text.front() == '+' || text.front() == '-')) {
    number.negative = text.front() == '-';
    text.remove_prefix(1);
  }
  // Digits, with single underscores only between two digits.
  if (text.empty() || text.front() == '_' || text.back() == '_') return std::nullopt;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '_') {
      if (text[i + 1] == '_') return std::nullopt;
      continue;
    }
    if (c < '0' || c > '9') return std::nullopt;
    if (number.digits.empty() && c == '0') continue;
    number.digits.push_back(c);
  }
  if (number.digits.empty()) {
    number.digits.push_back('0');
    number.negative = false;
  }
  return number;
}

}  // namespace

std::vector<std::string> jpeg_frame_names(const std::string& folder) {
  const std::string where = "video folder '" + printable(folder, 200) + "'";
  std::error_code error;
  std::filesystem::directory_iterator entries(folder, error);
  if (error) throw Error(where + ": cannot list it: " + error.message());

  std::vector<std::pair<FrameNumber, std::string>> frames;
  for (; entries != std::filesystem::directory_iterator(); entries.increment(error)) {
    const std::string name = entries->path().filename().string();
    const std::string_view extension = extension_of(name);
    if (!is_official_jpeg_extension(extension)) continue;
    const std::string_view stem = std::string_view(name).substr(0, name.size() - extension.size());
    std::optional<FrameNumber> number = parse_python_int(stem);
    if (!number) {
      throw Error(where + ": frame file '" + printable(name, 200) +
                  "' is not named <integer>.jpg; the official loader orders frames by the "
                  "integer of the name (e.g. 00042.jpg)");
    }
    frames.emplace_back(std::move(*number), name);
  }
  if (error) throw Error(where + ": cannot list it: " + error.message());
  if (frames.empty()) {
    throw Error(where + ": no JPEG frames (files named <frame index>.jpg or .jpeg, as the "
                        "official loader reads)");
  }
  std::sort(frames.begin(), frames.end());
  std::vector<std::string> names;
  names.reserve(frames.size());
  for (auto& frame : frames) names.push_back(std::move(frame.second));
  return names;
}

JpegFolderFrames::JpegFolderFrames(const std::string& folder, int64_t max_pixels)
    : folder_(folder), max_pixels_(max_pixels) {
  for (const std::string& name : jpeg_frame_names(folder)) {
    paths_.push_back((std::filesystem::path(folder) / name).string());
  }
  const RgbImage first = decode_image_file(paths_.front(), max_pixels_, ExifOrientation::ignore);
  width_ = first.width;
  height_ = first.height;
}

RgbImage JpegFolderFrames::decode(int64_t index) const {
  RgbImage image =
      decode_image_file(paths_[static_cast<size_t>(index)], max_pixels_, ExifOrientation::ignore);
  if (image.width != width_ || image.height != height_) {
    throw Error("video folder '" + printable(folder_, 200) + "': frame " + std::to_string(index) +
                " ('" + printable(paths_[static_cast<size_t>(index)], 200) + "') is " +
                std::to_string(image.width) + "x" + std::to_string(image.height) +
                ", the first frame " + std::to_string(width_) + "x" + std::to_string(height_) +
                "; every frame of a video must have one size");
  }
  return image;
}

std::optional<RgbImage> JpegFolderFrames::next() {
  if (next_index_ >= frame_count()) return std::nullopt;
  return frame(next_index_);
}

RgbImage JpegFolderFrames::frame(int64_t index) {
  if (index < 0 || index >= frame_count()) {
    throw Error("video folder '" + printable(folder_, 200) + "': no frame " +
                std::to_string(index) + " (it has " + std::to_string(frame_count()) + ")");
  }
  RgbImage image = decode(index);
  next_index_ = index + 1;
  return image;
}

}  // namespace sam2rt
