#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "io/image.h"
#include "io/video_frame_source.h"

namespace sam2rt {

// The frame files of a folder as the official load_video_frames_from_jpg_images
// picks and orders them: names whose extension (os.path.splitext) is exactly
// .jpg, .jpeg, .JPG or .JPEG, sorted by Python's int() of the rest of the name
// (so 10.jpg follows 9.jpg; "007", "+7", " 7" and "1_0" are integers as there).
// Names of equal value (7.jpg and 07.jpg), which the official code leaves in
// directory order, are ordered by their bytes here. Throws Error when the
// folder cannot be listed, holds no such file, or a name's stem is not an
// integer (where the official code raises ValueError); stems with non-ASCII
// digits, which Python's int() would accept, are refused too.
std::vector<std::string> jpeg_frame_names(const std::string& folder);

// A folder of JPEG frames, decoded as the official loader's Image.open(path)
// .convert("RGB") (no EXIF orientation; a PNG under a .jpg name is read as
// Pillow would). The size is the first frame's; a frame of another size is an
// Error (the official loader keeps the last frame's size for all).
class JpegFolderFrames final : public VideoFrameSource {
 public:
  explicit JpegFolderFrames(const std::string& folder,
                            int64_t max_pixels = kDefaultMaxImagePixels);

  std::optional<RgbImage> next() override;
  RgbImage frame(int64_t index) override;
  int64_t frame_count() const override { return static_cast<int64_t>(paths_.size()); }
  int width() const override { return width_; }
  int height() const override { return height_; }
  const std::string& origin() const override { return folder_; }

  // The frame files in order, with the folder prefixed.
  const std::vector<std::string>& frame_paths() const { return paths_; }

 private:
  RgbImage decode(int64_t index) const;

  std::string folder_;
  std::vector<std::string> paths_;
  int64_t max_pixels_;
  int width_ = 0;
  int height_ = 0;
  int64_t next_index_ = 0;
};

}  // namespace sam2rt
