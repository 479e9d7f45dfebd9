#include <httplib.h>
#include <nlohmann/json.hpp>
#include <omp.h>
#include <pthread.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <list>
#include <memory>
#include <mutex>
#include <new>
#include <thread>
#include <unordered_map>

#include "api/automatic_mask_generator.h"
#include "api/everything_request.h"
#include "api/image_cache.h"
#include "api/predictor.h"
#include "api/segment_request.h"
#include "api/web_page.h"
#include "commands.h"
#include "core/error.h"
#include "encode_gate.h"
#include "http_error.h"
#include "model_options.h"
#include "serve_anylabeling.h"
#include "serve_cvat.h"
#include "serve_handler.h"
#include "serve_label_studio.h"
#include "serve_state.h"
#include "serve_upload.h"
#include "serve_video.h"

namespace sam2rt::cli {

namespace {

using nlohmann::json;

constexpr int kHttpThreads = 16;
constexpr int64_t kMiB = 1024 * 1024;

nlohmann::json plain_error(int, const std::string& message) { return {{"error", message}}; }

void reply_error(httplib::Response& res, int status, const std::string& message) {
  reply_json(res, status, plain_error(status, message));
}

// One uploaded image as the server keeps it: the predictor with the decoder
// features (what segment needs) and the decoded photo (what everything needs: the
// generator encodes the photo and its crops itself).
struct ServedImage {
  ServedImage(Predictor encoded, RgbImage decoded) : predictor(std::move(encoded)), photo(std::move(decoded)) {}

  Predictor predictor;
  RgbImage photo;
};

// The uploaded images under one memory budget for features and photos together.
// The ImageCache gives the ids and holds the predictors; this keeps the photos
// beside them and decides what to drop: the least recently used images, whole,
// so that an id either works for every request or for none.
class ServedImages {
 public:
  explicit ServedImages(int64_t budget_bytes) : cache_(budget_bytes) {}

  static int64_t charge(const ServedImage& image) {
    return ImageCache::charge(image.predictor) + static_cast<int64_t>(image.photo.pixels.size());
  }

  // The newest image always stays, even when it alone is larger than the budget.
  std::string insert(std::shared_ptr<const ServedImage> image) {
    const int64_t bytes = charge(*image);
    std::lock_guard lock(mutex_);
    while (!by_recency_.empty() && bytes_ + bytes > cache_.budget()) drop(std::prev(by_recency_.end()));
    // Shares ownership with `image`: the cache's entry keeps the photo alive too.
    const std::shared_ptr<const Predictor> predictor(image, &image->predictor);
    const std::string id = cache_.insert(predictor);
    by_recency_.push_front(Entry{id, std::move(image), bytes});
    by_id_[id] = by_recency_.begin();
    bytes_ += bytes;
    return id;
  }

  // nullptr for an unknown (or dropped) id; otherwise marks the image as used.
  std::shared_ptr<const ServedImage> find(const std::string& id) {
    std::lock_guard lock(mutex_);
    const auto it = by_id_.find(id);
    if (it == by_id_.end()) return nullptr;
    by_recency_.splice(by_recency_.begin(), by_recency_, it->second);
    return it->second->image;
  }

  bool erase(const std::string& id) {
    std::lock_guard lock(mutex_);
    const auto it = by_id_.find(id);
    if (it == by_id_.end()) return false;
    drop(it->second);
    return true;
  }

  size_t size() const {
    std::lock_guard lock(mutex_);
    return by_id_.size();
  }
  int64_t bytes() const {
    std::lock_guard lock(mutex_);
    return bytes_;
  }
  int64_t budget() const { return cache_.budget(); }

 private:
  struct Entry {
    std::string id;
    std::shared_ptr<const ServedImage> image;
    int64_t bytes = 0;
  };

  void drop(std::list<Entry>::iterator entry) {
    cache_.erase(entry->id);
    bytes_ -= entry->bytes;
    by_id_.erase(entry->id);
    by_recency_.erase(entry);
  }

  // The cache never evicts by itself: its entries are those here, and their
  // features alone never exceed the budget that features and photos share.
  ImageCache cache_;
  mutable std::mutex mutex_;
  std::list<Entry> by_recency_;  // most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> by_id_;
  int64_t bytes_ = 0;
};

struct ServeOptions {
  ModelOptions model;
  std::string host = "127.0.0.1";
  int port = 8080;
  int64_t cache_mb = 2048;
  int64_t max_upload_mb = 50;
  int max_points = kMaxPoints;
  int64_t max_everything_points = EverythingLimits{}.max_points;
  int concurrent_encodes = 1;
  int queued_encodes = 8;
  int max_videos = 4;
  LabelStudioOptions label_studio;
  std::string anylabeling_token;
};

// Where the labelling protocols live on the server (docs/LABELLING.md).
constexpr const char* kLabelStudioPrefix = "/label-studio";
constexpr const char* kAnyLabelingPrefix = "/anylabeling";
constexpr const char* kCvatPrefix = "/cvat";

// The HTTP API of `sam2rt serve` (documented in docs/SERVE.md) over one model.
class SegmentServer {
 public:
  SegmentServer(const ServeOptions& options, std::shared_ptr<const Sam2Model> model)
      : options_(options),
        model_(std::move(model)),
        images_(options.cache_mb * kMiB),
        encodes_(options.concurrent_encodes, options.queued_encodes),
        labelling_images_(model_, options.cache_mb * kMiB, encodes_,
                          EncodeOptions{.precision = options.model.encoder_precision()},
                          options.model.max_image_pixels),
        labelling_{labelling_images_, model_->config().mask_threshold, options.max_upload_mb * kMiB,
                   options.model.threads, "sam2rt " + options.model.source().describe()},
        videos_(model_, encodes_,
                VideoServeOptions{.max_upload_bytes = options.max_upload_mb * kMiB,
                                  .max_videos = options.max_videos,
                                  .video = {.max_pixels = options.model.max_image_pixels,
                                            .max_points = options.max_points,
                                            .threads = options.model.threads}}) {}

  void add_routes(httplib::Server& server) {
    server.set_payload_max_length(static_cast<size_t>(options_.max_upload_mb * kMiB));
    server.set_error_handler(httplib::Server::HandlerWithResponse(
        [this](const httplib::Request& req, httplib::Response& res) { return describe_bare_error(req, res); }));
    server.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
      reply_error(res, 500, "internal error");
    });

    for (const WebFile& file : web_files()) {
      // Routes are regular expressions: "/app.css" must not also answer "/app-css".
      std::string path;
      for (const char c : file.url_path) path += c == '.' ? std::string("\\.") : std::string(1, c);
      server.Get(path, guarded([file](const httplib::Request&, httplib::Response& res) { send_web_file(file, res); }));
      refuse_other_methods(server, path, "GET");
    }
    server.Get("/healthz", guarded([this](const httplib::Request&, httplib::Response& res) { health(res); }));
    server.Post("/v1/images", guarded([this](const httplib::Request& req, httplib::Response& res) { upload(req, res); }));
    server.Post(kSegmentPath,
                guarded([this](const httplib::Request& req, httplib::Response& res) { segment(req, res); }));
    server.Post(kEverythingPath,
                guarded([this](const httplib::Request& req, httplib::Response& res) { everything(req, res); }));
    server.Delete(kImagePath, guarded([this](const httplib::Request& req, httplib::Response& res) { remove(req, res); }));
    const auto video_routes =
        add_video_routes(server, videos_, [this](httplib::Server::Handler handler) { return guarded(handler); });

    // Label Studio's backend URL may be the server's root (its routes do not clash
    // with ours; GET / stays the page) or /label-studio/.
    add_label_studio_routes(server, "", /*answer_root=*/false, labelling_, options_.label_studio);
    add_label_studio_routes(server, kLabelStudioPrefix, /*answer_root=*/true, labelling_, options_.label_studio);
    add_anylabeling_routes(server, kAnyLabelingPrefix, labelling_, options_.anylabeling_token);
    add_cvat_routes(server, kCvatPrefix, labelling_);

    refuse_other_methods(server, "/healthz", "GET");
    refuse_other_methods(server, "/v1/images", "POST");
    refuse_other_methods(server, kSegmentPath, "POST");
    refuse_other_methods(server, kEverythingPath, "POST");
    refuse_other_methods(server, kImagePath, "DELETE");
    for (const auto& [pattern, allowed] : video_routes) refuse_other_methods(server, pattern, allowed);
  }

 private:
  static constexpr const char* kImagePath = R"(/v1/images/([^/]+))";
  static constexpr const char* kSegmentPath = R"(/v1/images/([^/]+)/segment)";
  static constexpr const char* kEverythingPath = R"(/v1/images/([^/]+)/everything)";

  static void send_web_file(const WebFile& file, httplib::Response& res) {
    // The files change with the binary: the browser revalidates instead of mixing versions.
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Content-Type-Options", "nosniff");
    // The page only talks to this server; masks arrive as data: URLs, photos as blob: URLs.
    res.set_header("Content-Security-Policy",
                   "default-src 'self'; img-src 'self' data: blob:; object-src 'none'; base-uri 'none'");
    res.set_content(file.body.data(), file.body.size(), std::string(file.content_type));
  }

  // Every handler answers a JSON error instead of letting an exception escape.
  template <typename Handler>
  httplib::Server::Handler guarded(Handler handler) {
    return cli::guarded(plain_error, options_.model.threads, handler);
  }

  // `allowed`: the methods the path answers, as the Allow header lists them ("GET, DELETE").
  void refuse_other_methods(httplib::Server& server, const std::string& pattern, const std::string& allowed) {
    auto refuse = [allowed](const httplib::Request& req, httplib::Response& res) {
      res.set_header("Allow", allowed);
      reply_error(res, 405, "method " + req.method + " is not allowed on " + req.path + "; use " + allowed);
    };
    const auto allows = [&allowed](const std::string& method) { return allowed.find(method) != std::string::npos; };
    if (!allows("GET")) server.Get(pattern, refuse);
    if (!allows("POST")) server.Post(pattern, refuse);
    if (!allows("DELETE")) server.Delete(pattern, refuse);
    server.Put(pattern, refuse);
    server.Patch(pattern, refuse);
  }

  // Responses httplib produced itself (no route, oversized or malformed request)
  // get a JSON body like ours.
  httplib::Server::HandlerResponse describe_bare_error(const httplib::Request& req, httplib::Response& res) const {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    std::string message;
    switch (res.status) {
      case 404: message = "no such endpoint: " + req.method + " " + req.path; break;
      case 413:
        // httplib caps form-encoded bodies (curl -d's default type) at 8 KB.
        message = req.get_header_value("Content-Type") == "application/x-www-form-urlencoded"
                      ? "form-encoded body too large: send images with Content-Type: application/octet-stream "
                        "(or image/png, image/jpeg)"
                      : "request too large: uploads are limited to " + std::to_string(options_.max_upload_mb) +
                            " MB (--max-upload-mb)";
        break;
      case 400:
        message = req.get_header_value("Content-Type").starts_with("multipart/form-data")
                      ? "malformed multipart/form-data body: send the image as a file field (curl -F file=@photo.jpg)"
                      : "malformed HTTP request";
        break;
      default: message = "request failed with HTTP status " + std::to_string(res.status); break;
    }
    reply_json(res, res.status, error_body_for(req.path)(res.status, message));
    return httplib::Server::HandlerResponse::Handled;
  }

  // Each labelling protocol's clients read errors in its own shape.
  static ErrorBody error_body_for(const std::string& path) {
    auto under = [&path](const std::string& prefix) { return path == prefix || path.starts_with(prefix + "/"); };
    if (under(kAnyLabelingPrefix)) return anylabeling_error;
    if (under(kCvatPrefix)) return cvat_error;
    if (under(kLabelStudioPrefix)) return label_studio_error;
    for (const char* root_route : {"/health", "/setup", "/predict", "/webhook", "/metrics"}) {
      if (path == root_route) return label_studio_error;
    }
    return plain_error;
  }

  static HttpError unknown_image(const std::string& id) {
    return HttpError(404, "unknown image id '" + id.substr(0, 64) +
                              "': upload the image with POST /v1/images (ids are dropped by DELETE, when the cache "
                              "is full, and when the server restarts)");
  }

  void health(httplib::Response& res) const {
    reply_json(res, 200,
               {{"status", "ok"},
                {"model", options_.model.source().describe()},
                {"synthetic_weights", !options_.model.synthetic_salt.empty()},
                {"precision", options_.model.precision},
                {"device", model_->encoder().backend().description()},
                {"images", images_.size()},
                {"cache_bytes", images_.bytes()},
                {"cache_budget_bytes", images_.budget()},
                {"labelling_images", labelling_images_.size()},
                {"labelling_encodes", labelling_images_.encodes()},
                {"videos", videos_.size()}});
  }

  void upload(const httplib::Request& req, httplib::Response& res) {
    const std::string& bytes =
        uploaded_bytes(req, {"image", "the image file's bytes (PNG or JPEG)", "photo.jpg"});
    if (static_cast<int64_t>(bytes.size()) > options_.max_upload_mb * kMiB) {
      throw HttpError(413, "upload too large: " + std::to_string(bytes.size()) + " bytes, at most " +
                               std::to_string(options_.max_upload_mb) + " MB (--max-upload-mb)");
    }
    const auto slot = encodes_.enter();
    RgbImage image = decode_image_bytes(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(),
                                        "uploaded image", options_.model.max_image_pixels);
    const int width = image.width, height = image.height;
    const auto start = std::chrono::steady_clock::now();
    Predictor predictor = encode_for_prompts(model_, image, EncodeOptions{.precision = options_.model.encoder_precision()});
    const double encode_ms = milliseconds_since(start);
    auto served = std::make_shared<ServedImage>(std::move(predictor), std::move(image));
    const std::string id = images_.insert(std::move(served));
    std::fprintf(stderr, "serve: image %s (%dx%d) encoded in %.0f ms; %zu cached\n", id.c_str(), width, height,
                 encode_ms, images_.size());
    res.set_header("Location", "/v1/images/" + id);
    reply_json(res, 201, {{"id", id}, {"width", width}, {"height", height}, {"encode_ms", encode_ms}});
  }

  void segment(const httplib::Request& req, httplib::Response& res) {
    const auto image = images_.find(req.matches[1]);
    if (!image) throw unknown_image(req.matches[1]);
    const Predictor& predictor = image->predictor;
    const SegmentRequest request = parse_segment_request(req.body, predictor.orig_width(), predictor.orig_height(),
                                                         SegmentLimits{options_.max_points});
    const auto start = std::chrono::steady_clock::now();
    const MaskPrediction prediction = predict_segment_request(predictor, request);
    const double decode_ms = milliseconds_since(start);
    reply_json(res, 200, segment_response(prediction, model_->config().mask_threshold, request.format, decode_ms));
  }

  // Segment everything: the official automatic mask generator on the kept photo.
  // It encodes the photo (and its crops) again, so it waits its turn with uploads.
  void everything(const httplib::Request& req, httplib::Response& res) {
    const auto image = images_.find(req.matches[1]);
    if (!image) throw unknown_image(req.matches[1]);
    const AmgParams params = parse_everything_request(req.body, EverythingLimits{options_.max_everything_points});
    const auto slot = encodes_.enter();
    const auto start = std::chrono::steady_clock::now();
    const EncodeOptions encode{.precision = options_.model.encoder_precision()};
    const AutomaticMaskGenerator generator(model_, params, encode);
    const std::vector<AmgMask> masks = generator.generate(image->photo);
    const double generate_ms = milliseconds_since(start);
    std::fprintf(stderr, "serve: everything on image %s: %zu masks in %.0f ms\n", req.matches[1].str().c_str(),
                 masks.size(), generate_ms);
    reply_json(res, 200, everything_response(masks, generate_ms));
  }

  void remove(const httplib::Request& req, httplib::Response& res) {
    const std::string id = req.matches[1];
    if (!images_.erase(id)) throw unknown_image(id);
    reply_json(res, 200, {{"deleted", id}});
  }

  const ServeOptions& options_;
  std::shared_ptr<const Sam2Model> model_;
  ServedImages images_;
  EncodeGate encodes_;
  ImagesByContent labelling_images_;
  LabellingContext labelling_;
  // After encodes_: its videos' propagations take encode slots until they stop.
  ServedVideos videos_;
};

std::string url_host(const std::string& host) {
  return host.find(':') != std::string::npos ? "[" + host + "]" : host;
}

bool is_loopback(const std::string& host) {
  return host == "127.0.0.1" || host == "localhost" || host == "::1";
}

// The thread that waits for SIGINT/SIGTERM. Threads that libraries start before
// main (OpenBLAS, loaded with OpenCV, starts its workers at load time) do not
// block those signals, so one of them may receive it: the handler hands it on.
std::atomic<pthread_t> stop_signal_waiter;
std::atomic<bool> stop_signal_waiter_ready{false};

extern "C" void forward_stop_signal(int signal_number) {
  if (stop_signal_waiter_ready) pthread_kill(stop_signal_waiter, signal_number);
}

void serve(const ServeOptions& options) {
  // SIGINT/SIGTERM stop the server cleanly; a dedicated thread waits for them so
  // that no work happens inside a signal handler. SIGUSR1 releases that thread
  // when the server has stopped.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGUSR1);
  // Blocked before any thread (OpenMP's included) starts, so every thread inherits it.
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  ModelOptions unpinned = options.model;
  unpinned.pin_compute_threads = false;
  // With the video modules: the video view tracks with the same model.
  auto model = unpinned.load(/*video=*/true);
  SegmentServer api(options, model);
  httplib::Server server;
  server.new_task_queue = [] { return new httplib::ThreadPool(kHttpThreads); };
  // httplib's default adds SO_REUSEPORT, which would let a second server share a
  // port that is in use instead of failing.
  socket_t listening_socket = INVALID_SOCKET;
  server.set_socket_options([&listening_socket](socket_t socket) {
    int yes = 1;
    setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    listening_socket = socket;
  });
  // Answers go out at once: with Nagle's algorithm a mask's body waits for the
  // client's delayed ACK of the headers (40 ms and more on Linux).
  server.set_tcp_nodelay(true);
  api.add_routes(server);

  int port = options.port;
  if (port == 0) {
    port = server.bind_to_any_port(options.host);
  } else if (!server.bind_to_port(options.host, port)) {
    port = -1;
  }
  // httplib listens with a backlog of 5 (CPPHTTPLIB_LISTEN_BACKLOG, compiled into
  // Debian's library): a burst of clients (a team clicking in a labelling tool)
  // overflowed it and saw connections reset. On Linux, listen() again on the
  // listening socket raises the backlog.
  if (port >= 0 && listening_socket != INVALID_SOCKET) ::listen(listening_socket, SOMAXCONN);
  if (port < 0) {
    throw Error("cannot listen on " + options.host + ":" + std::to_string(options.port) +
                ": the address is in use or not available here; pick another --port (0 = any free port) or --host");
  }
  if (!is_loopback(options.host)) {
    std::fprintf(stderr, "warning: listening on %s: anyone who can reach this address can use the server "
                         "(it has no authentication)\n", options.host.c_str());
  }

  std::atomic<bool> finished{false};
  std::thread stopper([&server, &finished, stop_signals] {
    for (;;) {
      int signal_number = 0;
      sigwait(&stop_signals, &signal_number);
      if (finished) return;
      if (signal_number == SIGUSR1) continue;
      std::fprintf(stderr, "serve: stopping (signal %d)\n", signal_number);
      // stop() only affects a server that is already listening.
      while (!server.is_running() && !finished) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      server.stop();
    }
  });

  stop_signal_waiter = stopper.native_handle();
  stop_signal_waiter_ready = true;
  struct sigaction forward {};
  forward.sa_handler = forward_stop_signal;
  sigemptyset(&forward.sa_mask);
  sigaction(SIGINT, &forward, nullptr);
  sigaction(SIGTERM, &forward, nullptr);

  std::printf("http://%s:%d/\n", url_host(options.host).c_str(), port);
  std::fflush(stdout);
  std::fprintf(stderr, "serve: open the URL above in a browser; Ctrl+C stops the server\n");
  const bool listened = server.listen_after_bind();
  finished = true;
  stop_signal_waiter_ready = false;
  pthread_kill(stopper.native_handle(), SIGUSR1);
  stopper.join();
  if (!listened) throw Error("the server stopped unexpectedly on " + options.host + ":" + std::to_string(port));
}

}  // namespace

void register_serve(CLI::App& app) {
  auto options = std::make_shared<ServeOptions>();
  CLI::App* sub = app.add_subcommand(
      "serve",
      "Serve tap-to-segment in the browser, plus a JSON API.\n"
      "Interactive segmentation in the browser: starts a local HTTP server with a page where you open a photo and "
      "click (object), right-click or shift+click (background) or drag (box) to see the mask, keep several objects "
      "and download them (COCO JSON, PNG masks, cut-outs), or press Everything to see every mask; or open a video, "
      "click objects on any frame and track them through it; plus the JSON API "
      "the page uses (docs/SERVE.md). Prints the URL as its first line of output.");
  options->model.add_to(*sub);
  options->model.add_device_to(*sub);
  sub->add_option("--host", options->host, "address to listen on; anything but loopback exposes the server")
      ->default_val("127.0.0.1");
  sub->add_option("--port", options->port, "TCP port; 0 picks a free one (the URL line shows which)")
      ->default_val(8080)
      ->check(CLI::Range(0, 65535));
  sub->add_option("--cache-mb", options->cache_mb,
                  "memory for uploaded images (encoded features and decoded photo); the least recently used are "
                  "dropped beyond it")
      ->default_val(2048)
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  sub->add_option("--max-upload-mb", options->max_upload_mb, "largest accepted request body (larger: HTTP 413)")
      ->default_val(50)
      ->check(CLI::Range(int64_t{1}, int64_t{4096}));
  sub->add_option("--max-points", options->max_points, "most points in one segment request")
      ->default_val(kMaxPoints)
      ->check(CLI::Range(1, kMaxPoints));
  sub->add_option("--max-everything-points", options->max_everything_points,
                  "most grid points (over all crops) in one everything request")
      ->default_val(EverythingLimits{}.max_points)
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  sub->add_option("--concurrent-encodes", options->concurrent_encodes,
                  "images encoded (or segmented everything) at the same time (each uses all --threads)")
      ->default_val(1)
      ->check(CLI::Range(1, 64));
  sub->add_option("--max-videos", options->max_videos,
                  "videos open at once (each holds a tracker's memory); beyond it the least recently used one "
                  "that is not propagating is dropped")
      ->default_val(4)
      ->check(CLI::Range(1, 64));
  sub->add_option("--data-root", options->label_studio.data_root,
                  "Label Studio: the folder its tasks' local images are read from (its media folder for "
                  "/data/upload/... URLs, or its local-files document root); nothing outside it is read")
      ->check(CLI::ExistingDirectory);
  sub->add_option("--label-studio-basic-auth", options->label_studio.basic_auth,
                  "Label Studio: require HTTP basic auth with these credentials on its routes")
      ->type_name("USER:PASSWORD");
  sub->add_flag("--label-studio-polygons", options->label_studio.polygons,
                "Label Studio: answer polygonlabels (outlines in percent) instead of brushlabels");
  sub->add_flag("--label-studio-allow-http", options->label_studio.allow_http,
                "Label Studio: fetch tasks' http:// and https:// image URLs (each at most --max-upload-mb, 30 s); "
                "off: local files under --data-root and data: URLs only");
  sub->add_option("--anylabeling-token", options->anylabeling_token,
                  "X-AnyLabeling: require this API key in the Token header (all but /anylabeling/health)");
  sub->callback([options] { serve(*options); });
}

}  // namespace sam2rt::cli
