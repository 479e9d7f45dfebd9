#include "serve_video.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include "core/error.h"
#include "http_error.h"
#include "io/jpeg_writer.h"
#include "io/png_writer.h"
#include "model_options.h"
#include "serve_handler.h"
#include "serve_upload.h"

namespace sam2rt::cli {

namespace {

using nlohmann::json;

constexpr int kFrameJpegQuality = 90;

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

HttpError unknown_video(const std::string& id) {
  return HttpError(404, "unknown video id '" + id.substr(0, 64) +
                            "': upload the video with POST /v1/videos (ids are dropped by DELETE, when more than "
                            "--max-videos are open, and when the server restarts)");
}

json video_json(const std::string& id, const ServedVideo& video) {
  const VideoBounds& bounds = video.bounds();
  return {{"id", id},
          {"frames", bounds.frames},
          {"width", bounds.width},
          {"height", bounds.height},
          {"fps", video.fps() ? json(*video.fps()) : json()}};
}

}  // namespace

ServedVideos::ServedVideos(std::shared_ptr<const Sam2Model> model, EncodeGate& gate, const VideoServeOptions& options)
    : model_(std::move(model)), gate_(gate), options_(options) {}

ServedVideos::~ServedVideos() {
  // Each video stops its propagation and removes its file; then the folder goes.
  videos_.clear();
  if (!folder_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(folder_, ignored);
  }
}

std::string ServedVideos::folder() {
  std::lock_guard lock(mutex_);
  if (folder_.empty()) {
    std::string pattern = (std::filesystem::temp_directory_path() / "sam2rt-serve-videos-XXXXXX").string();
    if (!mkdtemp(pattern.data())) throw std::runtime_error("cannot create a folder for uploaded videos in " +
                                                           std::filesystem::temp_directory_path().string());
    folder_ = pattern;
  }
  return folder_;
}

bool ServedVideos::room_for_one_more() {
  const auto full = [&] { return static_cast<int>(videos_.size()) >= options_.max_videos; };
  videos_.drop_oldest(full, [&](const std::string& id, const std::shared_ptr<ServedVideo>& video) {
    if (video->propagating()) return false;
    std::fprintf(stderr, "serve: video %s dropped (--max-videos %d)\n", id.c_str(), options_.max_videos);
    return true;
  });
  return !full();
}

std::pair<std::string, std::shared_ptr<ServedVideo>> ServedVideos::add(const std::string& bytes) {
  const std::string directory = folder();
  std::string id;
  {
    std::lock_guard lock(mutex_);
    if (!room_for_one_more()) {
      throw HttpError(503, "busy: all " + std::to_string(options_.max_videos) +
                               " open videos (--max-videos) are propagating; retry later or delete one");
    }
    id = videos_.unused_id();
  }
  const std::string path = directory + "/" + id;
  {
    std::ofstream file(path, std::ios::binary);
    file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!file.flush()) {
      std::error_code ignored;
      std::filesystem::remove(path, ignored);
      throw std::runtime_error("cannot store the uploaded video in " + directory);
    }
  }
  std::shared_ptr<ServedVideo> video;
  try {
    video = std::make_shared<ServedVideo>(path, model_, gate_, options_.video);
  } catch (const Error& e) {
    // The reader names the file; the client knows it as the upload.
    throw Error(replace_all(e.what(), path, "uploaded video"));
  }
  std::lock_guard lock(mutex_);
  if (!room_for_one_more()) {
    throw HttpError(503, "busy: all " + std::to_string(options_.max_videos) +
                             " open videos (--max-videos) are propagating; retry later or delete one");
  }
  videos_.insert(id, video);
  return {id, video};
}

std::shared_ptr<ServedVideo> ServedVideos::find(const std::string& id) {
  std::lock_guard lock(mutex_);
  const std::shared_ptr<ServedVideo>* video = videos_.find(id);
  return video ? *video : nullptr;
}

bool ServedVideos::erase(const std::string& id) {
  std::optional<std::shared_ptr<ServedVideo>> video;  // stopped and removed outside the lock
  {
    std::lock_guard lock(mutex_);
    video = videos_.erase(id);
  }
  return video.has_value();
}

size_t ServedVideos::size() const {
  std::lock_guard lock(mutex_);
  return videos_.size();
}

std::vector<std::pair<std::string, std::string>> add_video_routes(httplib::Server& server, ServedVideos& videos,
                                                                  const RouteGuard& guard) {
  const std::string videos_path = "/v1/videos";
  const std::string video_path = R"(/v1/videos/([^/]+))";
  const std::string frame_path = video_path + R"(/frames/([^/]+))";
  const std::string prompts_path = video_path + "/prompts";
  const std::string clear_path = video_path + "/clear";
  const std::string object_path = video_path + R"(/objects/([^/]+))";
  const std::string propagate_path = video_path + "/propagate";
  const std::string masks_path = video_path + R"(/masks/([^/]+))";
  const std::string reset_path = video_path + "/reset";

  auto found = [&videos](const httplib::Request& req) {
    auto video = videos.find(req.matches[1]);
    if (!video) throw unknown_video(req.matches[1]);
    return video;
  };

  server.Post(videos_path, guard([&videos](const httplib::Request& req, httplib::Response& res) {
    const std::string& bytes = uploaded_bytes(
        req, {"video", "the video file's bytes (MP4, WebM, Matroska, AVI, ...: what FFmpeg reads)", "clip.mp4"});
    const int64_t limit = videos.options().max_upload_bytes;
    if (static_cast<int64_t>(bytes.size()) > limit) {
      throw HttpError(413, "upload too large: " + std::to_string(bytes.size()) + " bytes, at most " +
                               std::to_string(limit / (1024 * 1024)) + " MB (--max-upload-mb)");
    }
    const auto start = std::chrono::steady_clock::now();
    const auto [id, video] = videos.add(bytes);
    const double open_ms = milliseconds_since(start);
    const VideoBounds& bounds = video->bounds();
    std::fprintf(stderr, "serve: video %s (%lld frames, %dx%d) opened in %.0f ms; %zu open\n", id.c_str(),
                 static_cast<long long>(bounds.frames), bounds.width, bounds.height, open_ms, videos.size());
    json body = video_json(id, *video);
    body["open_ms"] = open_ms;
    res.set_header("Location", "/v1/videos/" + id);
    reply_json(res, 201, body);
  }));

  server.Get(video_path, guard([found](const httplib::Request& req, httplib::Response& res) {
    const auto video = found(req);
    json body = video_json(req.matches[1], *video);
    body["objects"] = video->obj_ids();
    body["frames_with_masks"] = video->frames_with_masks();
    body["propagation"] = progress_json(video->progress());
    reply_json(res, 200, body);
  }));
  server.Delete(video_path, guard([&videos](const httplib::Request& req, httplib::Response& res) {
    const std::string id = req.matches[1];
    if (!videos.erase(id)) throw unknown_video(id);
    reply_json(res, 200, {{"deleted", id}});
  }));

  server.Get(frame_path, guard([found](const httplib::Request& req, httplib::Response& res) {
    const auto video = found(req);
    const int64_t frame = parse_frame_text(req.matches[2].str(), video->bounds());
    const std::string format = req.has_param("format") ? req.get_param_value("format") : "jpeg";
    if (format != "jpeg" && format != "png") {
      throw HttpError(400, "format must be jpeg or png, got '" + format.substr(0, 32) + "'");
    }
    const RgbImage image = video->frame_image(frame);
    const std::vector<uint8_t> bytes =
        format == "png" ? encode_png_rgb8(image.pixels.data(), image.width, image.height)
                        : encode_jpeg_rgb8(image.pixels.data(), image.width, image.height, kFrameJpegQuality);
    // A video id's frames never change: the page scrubs back without asking again.
    res.set_header("Cache-Control", "private, max-age=86400, immutable");
    res.set_content(reinterpret_cast<const char*>(bytes.data()), bytes.size(), format == "png" ? "image/png" : "image/jpeg");
  }));

  server.Post(prompts_path, guard([found](const httplib::Request& req, httplib::Response& res) {
    const auto video = found(req);
    const VideoPromptRequest request =
        parse_video_prompt_request(req.body, video->bounds(), video->settings().max_points);
    const auto start = std::chrono::steady_clock::now();
    json body = frame_masks_json(video->add_prompt(request), request.format);
    body["timing_ms"] = {{"predict", milliseconds_since(start)}};
    reply_json(res, 200, body);
  }));
  server.Post(clear_path, guard([found](const httplib::Request& req, httplib::Response& res) {
    const auto video = found(req);
    const ObjectOnFrame request = parse_object_on_frame(req.body, video->bounds());
    const MaskFormat format = req.has_param("format") ? parse_mask_format(req.get_param_value("format")) : MaskFormat::png;
    reply_json(res, 200, frame_masks_json(video->clear_prompts(request), format));
  }));
  server.Delete(object_path, guard([found](const httplib::Request& req, httplib::Response& res) {
    const auto video = found(req);
    reply_json(res, 200, {{"objects", video->remove_object(parse_obj_id_text(req.matches[2].str()))}});
  }));

  server.Post(propagate_path, guard([found](const httplib::Request& req, httplib::Response& res) {
    const auto video = found(req);
    const PropagateRequest request = parse_propagate_request(req.body, video->bounds());
    reply_json(res, 202, progress_json(video->start_propagation(request)));
  }));
  server.Get(propagate_path, guard([found](const httplib::Request& req, httplib::Response& res) {
    reply_json(res, 200, progress_json(found(req)->progress()));
  }));
  server.Delete(propagate_path, guard([found](const httplib::Request& req, httplib::Response& res) {
    const auto video = found(req);
    video->cancel_propagation();
    reply_json(res, 200, progress_json(video->progress()));
  }));

  server.Get(masks_path, guard([found](const httplib::Request& req, httplib::Response& res) {
    const auto video = found(req);
    const int64_t frame = parse_frame_text(req.matches[2].str(), video->bounds());
    const MaskFormat format = req.has_param("format") ? parse_mask_format(req.get_param_value("format")) : MaskFormat::png;
    const std::optional<FrameMasks> masks = video->masks(frame);
    reply_json(res, 200, frame_masks_json(masks ? *masks : FrameMasks{frame, {}}, format));
  }));

  server.Post(reset_path, guard([found](const httplib::Request& req, httplib::Response& res) {
    found(req)->reset();
    reply_json(res, 200, {{"reset", req.matches[1].str()}});
  }));

  return {{videos_path, "POST"},        {video_path, "GET, DELETE"},        {frame_path, "GET"},
          {prompts_path, "POST"},       {clear_path, "POST"},               {object_path, "DELETE"},
          {propagate_path, "GET, POST, DELETE"}, {masks_path, "GET"}, {reset_path, "POST"}};
}

}  // namespace sam2rt::cli
