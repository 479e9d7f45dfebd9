#pragma once

#include <httplib.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "api/sam2_model.h"
#include "core/recently_used.h"
#include "encode_gate.h"
#include "served_video.h"

namespace sam2rt::cli {

struct VideoServeOptions {
  int64_t max_upload_bytes = 0;  // --max-upload-mb
  int max_videos = 0;            // --max-videos: open at once; the least recently used idle one goes
  ServedVideo::Settings video;
};

// The uploaded videos of `sam2rt serve` by id, their files in a folder the
// server creates (under TMPDIR) at the first upload and removes when it stops.
// Beyond max_videos the least recently used video that is not propagating is
// dropped. Thread-safe.
class ServedVideos {
 public:
  ServedVideos(std::shared_ptr<const Sam2Model> model, EncodeGate& gate, const VideoServeOptions& options);
  ~ServedVideos();
  ServedVideos(const ServedVideos&) = delete;
  ServedVideos& operator=(const ServedVideos&) = delete;

  // A video file's bytes -> its id. Error (400) when FFmpeg cannot read every
  // frame; HttpError 503 when max_videos are all propagating.
  std::pair<std::string, std::shared_ptr<ServedVideo>> add(const std::string& bytes);
  // nullptr for an unknown (deleted, dropped) id; otherwise marks the video as used.
  std::shared_ptr<ServedVideo> find(const std::string& id);
  bool erase(const std::string& id);
  size_t size() const;
  const VideoServeOptions& options() const { return options_; }

 private:
  std::string folder();  // created at the first call
  bool room_for_one_more();  // under mutex_: drops idle videos beyond max_videos - 1

  std::shared_ptr<const Sam2Model> model_;
  EncodeGate& gate_;
  const VideoServeOptions options_;
  mutable std::mutex mutex_;
  std::string folder_;
  RecentlyUsed<std::shared_ptr<ServedVideo>> videos_;
};

// Wraps a handler so that failures become serve's JSON errors (serve_handler.h's guarded).
using RouteGuard = std::function<httplib::Server::Handler(httplib::Server::Handler)>;

// Registers the video API (docs/SERVE.md, "Video"). Returns each path pattern
// with the methods it answers ("GET, DELETE"), for the 405 of the others.
std::vector<std::pair<std::string, std::string>> add_video_routes(httplib::Server& server, ServedVideos& videos,
                                                                  const RouteGuard& guard);

}  // namespace sam2rt::cli
