#include "serve_label_studio.h"

#include <filesystem>
#include <fstream>
#include <random>

#include "api/json_body.h"
#include "api/mask_polygons.h"
#include "io/base64.h"
#include "io/brush_rle.h"
#include "http_fetch.h"
#include "json_fields.h"
#include "serve_handler.h"

namespace sam2rt::cli {

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr const char* kModelClass = "Sam2rtSegmentAnything2";
// The polygon simplification of the segment_anything_2_image example (0.005 * arc length).
constexpr double kPolygonEpsilonFactor = 0.005;

// The value of `attribute` in the first <tag ...> of Label Studio's labelling config
// (XML); empty when there is no such tag or attribute. A plain scan: the config comes
// from the request, and only the names of three tags are needed.
std::string tag_attribute(const std::string& config, const std::string& tag, const std::string& attribute,
                          const std::string& required_name = {}) {
  size_t from = 0;
  while ((from = config.find("<" + tag, from)) != std::string::npos) {
    from += tag.size() + 1;
    if (from < config.size() && config[from] != ' ' && config[from] != '\n' && config[from] != '\t') continue;
    const size_t end = config.find('>', from);
    if (end == std::string::npos) return {};
    const std::string element = config.substr(from, end - from);
    auto value_of = [&element](const std::string& name) -> std::string {
      const std::string key = " " + name + "=\"";
      const size_t at = (" " + element).find(key);
      if (at == std::string::npos) return {};
      const size_t start = at + key.size() - 1;
      const size_t close = element.find('"', start);
      return close == std::string::npos ? std::string() : element.substr(start, close - start);
    };
    if (!required_name.empty() && value_of("name") != required_name) continue;
    return value_of(attribute);
  }
  return {};
}

std::string percent_decoded(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && std::isxdigit(static_cast<unsigned char>(text[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(text[i + 2]))) {
      out.push_back(static_cast<char>(std::stoi(text.substr(i + 1, 2), nullptr, 16)));
      i += 2;
    } else {
      out.push_back(text[i] == '+' ? ' ' : text[i]);
    }
  }
  return out;
}

std::string read_file_under(const fs::path& root, const std::string& relative, int64_t max_bytes) {
  std::error_code error;
  const fs::path canonical_root = fs::canonical(root, error);
  if (error) throw HttpError(500, "--data-root is not a readable folder");
  const fs::path path = fs::weakly_canonical(canonical_root / fs::path(relative).relative_path(), error);
  const auto [root_end, path_at] = std::mismatch(canonical_root.begin(), canonical_root.end(), path.begin(), path.end());
  if (error || root_end != canonical_root.end()) {
    throw HttpError(403, "the task's image lies outside --data-root");
  }
  if (!fs::is_regular_file(path, error)) throw HttpError(404, "the task's image is not a file under --data-root");
  const auto size = fs::file_size(path, error);
  if (error || static_cast<int64_t>(size) > max_bytes) {
    throw HttpError(413, "the task's image is larger than --max-upload-mb");
  }
  std::ifstream in(path, std::ios::binary);
  std::string bytes(size, '\0');
  if (!in.read(bytes.data(), static_cast<std::streamsize>(size))) throw HttpError(404, "the task's image cannot be read");
  return bytes;
}

constexpr long kImageFetchTimeoutSeconds = 30;

// The bytes of a task's image: a data: URL, a file under --data-root named as
// Label Studio names uploads (/data/upload/...), local files
// (/data/local-files/?d=...) or a plain path, or with --label-studio-allow-http an
// http(s) URL. Other URLs are refused.
std::string task_image(const std::string& reference, const LabellingContext& context,
                       const LabelStudioOptions& options) {
  if (reference.starts_with("data:")) {
    std::string bytes = image_bytes_from_base64_or_data_url(reference, "the task's image");
    if (static_cast<int64_t>(bytes.size()) > context.max_image_bytes) {
      throw HttpError(413, "the task's image is larger than --max-upload-mb");
    }
    return bytes;
  }
  const size_t scheme_end = reference.find("://");
  if (scheme_end != std::string::npos) {
    const std::string scheme = reference.substr(0, scheme_end).substr(0, 16);
    if (options.allow_http && (scheme == "http" || scheme == "https")) {
      return http_get_limited(reference, context.max_image_bytes, kImageFetchTimeoutSeconds);
    }
    throw HttpError(400, "the task's image is a URL (" + scheme +
                             "://...): serve reads local files under --data-root and data: URLs, and http(s) URLs "
                             "only with --label-studio-allow-http");
  }
  const std::string& data_root = options.data_root;
  if (data_root.empty()) {
    throw HttpError(400, "the task's image is a local file: start serve with --data-root (Label Studio's media or "
                         "local-files folder)");
  }
  std::string relative = reference;
  const std::string local_files = "/data/local-files/?d=";
  if (relative.starts_with(local_files)) {
    relative = percent_decoded(relative.substr(local_files.size()));
  } else if (relative.starts_with("/data/")) {
    relative = percent_decoded(relative.substr(6));
  }
  if (relative.find('\0') != std::string::npos) throw HttpError(400, "the task's image path holds a NUL byte");
  return read_file_under(data_root, relative, context.max_image_bytes);
}

std::string random_id() {
  thread_local std::mt19937_64 bits{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id;
  for (int i = 0; i < 10; ++i) id.push_back(kHex[bits() % 16]);
  return id;
}

struct ContextPrompt {
  Prompt prompt;
  std::string label;    // the label of the clicked keypoint or rectangle, given to the answer
  std::string to_name;  // the image tag the clicks were made on
};

// params.context.result: keypointlabels {x, y} and rectanglelabels {x, y, width,
// height}, in percent of the image; is_positive says object (true/1) or background.
ContextPrompt prompt_from_context(const json& results, int width, int height) {
  ContextPrompt out;
  for (size_t i = 0; i < results.size(); ++i) {
    const std::string where = "params.context.result[" + std::to_string(i) + "]";
    const json& result = results[i];
    const std::string type = required_string(result, "type", where);
    const json& value = required_field(result, "value", where);
    if (result.contains("to_name") && result["to_name"].is_string()) out.to_name = result["to_name"];
    if (value.contains(type) && value[type].is_array() && !value[type].empty() && value[type][0].is_string()) {
      out.label = value[type][0];
    }
    const double x = required_number(value, "x", where + ".value") * width / 100.0;
    const double y = required_number(value, "y", where + ".value") * height / 100.0;
    if (type == "keypointlabels") {
      int label = 0;
      if (result.contains("is_positive")) {
        const json& positive = result["is_positive"];
        if (!positive.is_boolean() && !positive.is_number()) throw Error(where + ": \"is_positive\" must be a boolean");
        label = positive.is_boolean() ? positive.get<bool>() : positive.get<double>() != 0;
      }
      out.prompt.points.push_back({static_cast<float>(x), static_cast<float>(y), label});
    } else if (type == "rectanglelabels") {
      if (out.prompt.box) throw Error(where + ": only one rectangle per request (SAM takes one box per object)");
      const double w = required_number(value, "width", where + ".value") * width / 100.0;
      const double h = required_number(value, "height", where + ".value") * height / 100.0;
      out.prompt.box = std::array<float, 4>{static_cast<float>(x), static_cast<float>(y), static_cast<float>(x + w),
                                            static_cast<float>(y + h)};
    } else {
      throw Error(where + ": \"type\" must be keypointlabels or rectanglelabels, not \"" + type.substr(0, 32) + "\"");
    }
  }
  return out;
}

class LabelStudioApi {
 public:
  LabelStudioApi(LabellingContext& context, LabelStudioOptions options)
      : context_(context), options_(std::move(options)) {}

  void authorize(const httplib::Request& req) const {
    if (options_.basic_auth.empty()) return;
    const std::string header = req.get_header_value("Authorization");
    const std::string scheme = "Basic ";
    bool valid = false;
    if (header.starts_with(scheme)) {
      try {
        valid = base64_decode(std::string_view(header).substr(scheme.size()), "credentials") == options_.basic_auth;
      } catch (const Error&) {
        valid = false;
      }
    }
    if (!valid) throw HttpError(401, "wrong or missing credentials (HTTP basic auth, --label-studio-basic-auth)");
  }

  json health() const { return {{"status", "UP"}, {"model_class", kModelClass}, {"model_version", version()}}; }
  json setup(const httplib::Request& req) const {
    if (!req.body.empty()) parse_json_object(req.body, "of setup");
    return {{"model_version", version()}};
  }

  json predict(const httplib::Request& req) const {
    const json body = parse_json_object(req.body, "with tasks and params");
    const json& tasks = required_array(body, "tasks", "the request");
    if (tasks.empty()) throw Error("\"tasks\" is empty");
    const json& data = required_field(tasks[0], "data", "tasks[0]");
    const json empty = json::object();
    const json& params = body.contains("params") && body["params"].is_object() ? body["params"] : empty;
    const json* results = nullptr;
    if (params.contains("context") && params["context"].is_object() && params["context"].contains("result")) {
      results = &params["context"]["result"];
      if (!results->is_array()) throw Error("params.context.result must be a list");
    }
    // No clicks yet (a prediction asked for on opening a task): nothing to say.
    if (!results || results->empty()) return {{"results", json::array()}, {"model_version", version()}};

    const std::string config = body.contains("label_config") && body["label_config"].is_string()
                                   ? body["label_config"].get<std::string>()
                                   : std::string();
    const std::string result_tag = options_.polygons ? "PolygonLabels" : "BrushLabels";
    std::string from_name = tag_attribute(config, result_tag, "name");
    std::string to_name = tag_attribute(config, result_tag, "toName");
    std::string key = "image";
    const std::string image_value = tag_attribute(config, "Image", "value", to_name);
    if (image_value.starts_with("$")) key = image_value.substr(1);
    const std::string reference = required_string(data, key, "tasks[0].data");

    const auto predictor = context_.images.encoded(task_image(reference, context_, options_),
                                                   "the task's image");
    const int width = predictor->orig_width(), height = predictor->orig_height();
    const ContextPrompt clicked = prompt_from_context(*results, width, height);
    if (from_name.empty()) from_name = options_.polygons ? "polygon" : "brush";
    if (to_name.empty()) to_name = clicked.to_name.empty() ? "image" : clicked.to_name;
    const BestMask best = predict_best_mask(*predictor, clicked.prompt, context_.mask_threshold);

    json result = json::array();
    auto add = [&](const std::string& type, json value) {
      value[type] = json::array({clicked.label});
      result.push_back({{"id", random_id()},
                        {"from_name", from_name},
                        {"to_name", to_name},
                        {"original_width", width},
                        {"original_height", height},
                        {"image_rotation", 0},
                        {"value", std::move(value)},
                        {"score", best.iou},
                        {"type", type},
                        {"readonly", false}});
    };
    if (options_.polygons) {
      for (const auto& outline : mask_outer_contours(best.mask, width, height, kPolygonEpsilonFactor)) {
        if (outline.size() < 3) continue;
        json points = json::array();
        for (const auto& [x, y] : outline) points.push_back({x * 100.0 / width, y * 100.0 / height});
        add("polygonlabels", {{"points", std::move(points)}, {"closed", true}});
      }
    } else {
      add("brushlabels",
          {{"format", "rle"}, {"rle", encode_brush_rle(best.mask.data(), static_cast<int64_t>(best.mask.size()))}});
    }
    json prediction = {{"result", std::move(result)}, {"model_version", version()}, {"score", best.iou}};
    return {{"results", json::array({std::move(prediction)})}, {"model_version", version()}};
  }

 private:
  std::string version() const { return context_.model_version; }

  LabellingContext& context_;
  const LabelStudioOptions options_;
};

}  // namespace

json label_studio_error(int status, const std::string& message) { return {{"status", status}, {"detail", message}}; }

void add_label_studio_routes(httplib::Server& server, const std::string& prefix, bool answer_root,
                             LabellingContext& context, const LabelStudioOptions& options) {
  auto api = std::make_shared<LabelStudioApi>(context, options);
  // Every route asks for the credentials first, when there are any.
  auto route = [&context, api](auto answer, int status) {
    return guarded(label_studio_error, context.threads,
                   [api, answer, status](const httplib::Request& req, httplib::Response& res) {
                     try {
                       api->authorize(req);
                     } catch (const HttpError&) {
                       res.set_header("WWW-Authenticate", "Basic realm=\"sam2rt\"");
                       throw;
                     }
                     reply_json(res, status, answer(req));
                   });
  };
  auto health = [api](const httplib::Request&) { return api->health(); };
  server.Get(prefix + "/health", route(health, 200));
  if (answer_root) server.Get(prefix + "/?", route(health, 200));
  server.Post(prefix + "/setup", route([api](const httplib::Request& req) { return api->setup(req); }, 200));
  server.Post(prefix + "/predict", route([api](const httplib::Request& req) { return api->predict(req); }, 200));
  server.Post(prefix + "/webhook", route([](const httplib::Request&) { return json::object(); }, 201));
  server.Get(prefix + "/metrics", route([](const httplib::Request&) { return json::object(); }, 200));
}

}  // namespace sam2rt::cli
