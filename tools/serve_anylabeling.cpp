#include "serve_anylabeling.h"

#include <chrono>
#include <ctime>

#include "api/binary_mask.h"
#include "api/json_body.h"
#include "api/mask_polygons.h"
#include "json_fields.h"
#include "serve_handler.h"

namespace sam2rt::cli {

namespace {

using nlohmann::json;

// The two models the server lists: the same SAM 2.1 decode, answered as outlines or as a box.
constexpr const char* kPolygonModel = "sam2rt_segment_anything_2.1";
constexpr const char* kRectangleModel = "sam2rt_segment_anything_2.1_rectangle";
// The label X-AnyLabeling's own SAM models give a shape before the user names it.
constexpr const char* kShapeLabel = "AUTOLABEL_OBJECT";
// X-AnyLabeling's default mask fineness (remote_server.py's epsilon_factor).
constexpr double kDefaultEpsilonFactor = 0.001;

std::string error_code(int status) {
  switch (status) {
    case 401: return "UNAUTHORIZED";
    case 404: return "MODEL_NOT_FOUND";
    case 413: return "PAYLOAD_TOO_LARGE";
    case 501: return "NOT_IMPLEMENTED";
    case 503: return "QUEUE_FULL";
    default: return status >= 500 ? "INFERENCE_ERROR" : "INVALID_REQUEST";
  }
}

std::string utc_timestamp() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

json model_info(const std::string& id, const LabellingContext& context) {
  const bool rectangle = id == kRectangleModel;
  return {{"display_name", rectangle ? "Segment Anything 2.1 (sam2rt, rectangle)" : "Segment Anything 2.1 (sam2rt)"},
          {"widgets",
           json::array({{{"name", "button_add_point"}, {"value", nullptr}},
                        {{"name", "button_remove_point"}, {"value", nullptr}},
                        {{"name", "button_add_rect"}, {"value", nullptr}},
                        {{"name", "button_clear"}, {"value", nullptr}},
                        {{"name", "button_finish_object"}, {"value", nullptr}}})},
          {"params", {{"model", context.model_version}, {"output", rectangle ? "rectangle" : "polygon"}}},
          {"batch_processing_mode", nullptr}};
}

bool known_model(const std::string& id) { return id == kPolygonModel || id == kRectangleModel; }

// params.marks: {"type": "point", "data": [x, y], "label": 1 | 0} and
// {"type": "rectangle", "data": [x0, y0, x1, y1]}, in pixels of the image.
Prompt prompt_from_marks(const json& params) {
  if (!params.is_object()) throw Error("\"params\" must be a JSON object");
  const json& marks = required_array(params, "marks", "params");
  Prompt prompt;
  for (size_t i = 0; i < marks.size(); ++i) {
    const std::string where = "params.marks[" + std::to_string(i) + "]";
    const json& mark = marks[i];
    const std::string type = required_string(mark, "type", where);
    const json& data = required_array(mark, "data", where);
    if (type == "point") {
      if (data.size() != 2) throw Error(where + ": a point's \"data\" is [x, y]");
      int label = 1;
      if (mark.contains("label")) {
        const json& value = mark["label"];
        if (!value.is_number_integer() || (value.get<int64_t>() != 0 && value.get<int64_t>() != 1)) {
          throw Error(where + ": \"label\" is 1 (object) or 0 (background)");
        }
        label = value.get<int>();
      }
      prompt.points.push_back({static_cast<float>(finite_number(data[0], where + " x")),
                               static_cast<float>(finite_number(data[1], where + " y")), label});
    } else if (type == "rectangle") {
      if (data.size() != 4) throw Error(where + ": a rectangle's \"data\" is [x0, y0, x1, y1]");
      if (prompt.box) throw Error(where + ": only one rectangle per request (SAM takes one box per object)");
      std::array<float, 4> box{};
      for (size_t k = 0; k < 4; ++k) box[k] = static_cast<float>(finite_number(data[k], where + " coordinate"));
      prompt.box = box;
    } else {
      throw Error(where + ": \"type\" must be \"point\" or \"rectangle\", not \"" + type.substr(0, 32) + "\"");
    }
  }
  if (prompt.points.empty() && !prompt.box) throw Error("params.marks holds no point and no rectangle");
  return prompt;
}

json shape(const std::string& type, json points, float score) {
  return {{"label", kShapeLabel}, {"shape_type", type},   {"points", std::move(points)},
          {"score", score},       {"attributes", json::object()}, {"description", nullptr},
          {"difficult", false},   {"direction", 0},       {"flags", nullptr},
          {"group_id", nullptr},  {"kie_linking", json::array()}};
}

json shapes_of(const BestMask& best, bool rectangle, double epsilon_factor) {
  // The shape schema's score lies in [0, 1]; a predicted IoU may stray outside.
  const float score = std::clamp(best.iou, 0.0f, 1.0f);
  json shapes = json::array();
  if (rectangle) {
    const MaskExtent extent = mask_extent(best.mask, best.width, best.height);
    if (extent.bbox.is_null()) return shapes;
    const int x0 = extent.bbox[0], y0 = extent.bbox[1], x1 = extent.bbox[2], y1 = extent.bbox[3];
    shapes.push_back(shape("rectangle", json::array({{x0, y0}, {x1, y0}, {x1, y1}, {x0, y1}}), score));
    return shapes;
  }
  for (const auto& outline : mask_outer_contours(best.mask, best.width, best.height, epsilon_factor)) {
    if (outline.size() < 3) continue;  // a polygon needs an area
    shapes.push_back(shape("polygon", outline, score));
  }
  return shapes;
}

class AnyLabelingApi {
 public:
  AnyLabelingApi(LabellingContext& context, std::string token) : context_(context), token_(std::move(token)) {}

  void health(httplib::Response& res) const {
    reply_json(res, 200, {{"status", "healthy"}, {"models_loaded", 2}, {"timestamp", utc_timestamp()}});
  }

  void models(const httplib::Request& req, httplib::Response& res) const {
    authorize(req);
    reply_json(res, 200,
               {{"success", true},
                {"data", {{kPolygonModel, model_info(kPolygonModel, context_)},
                          {kRectangleModel, model_info(kRectangleModel, context_)}}}});
  }

  void info(const httplib::Request& req, httplib::Response& res) const {
    authorize(req);
    const std::string id = req.matches[1];
    if (!known_model(id)) throw unknown_model(id);
    json data = model_info(id, context_);
    data["model_id"] = id;
    reply_json(res, 200, {{"success", true}, {"data", data}});
  }

  void predict(const httplib::Request& req, httplib::Response& res) const {
    authorize(req);
    const json body = parse_json_object(req.body, "with model, image and params");
    const std::string id = required_string(body, "model", "the request");
    if (!known_model(id)) throw unknown_model(id);
    const std::string image = image_bytes_from_base64_or_data_url(required_string(body, "image", "the request"),
                                                                  "\"image\"");
    if (static_cast<int64_t>(image.size()) > context_.max_image_bytes) {
      throw HttpError(413, "the image is larger than --max-upload-mb");
    }
    const json& params = required_field(body, "params", "the request");
    const Prompt prompt = prompt_from_marks(params);
    double epsilon_factor = kDefaultEpsilonFactor;
    if (params.contains("epsilon_factor")) {
      epsilon_factor = finite_number(params["epsilon_factor"], "params.epsilon_factor");
      if (epsilon_factor < 0 || epsilon_factor > 1) throw Error("params.epsilon_factor must lie in [0, 1]");
    }
    const auto predictor = context_.images.encoded(image, "\"image\"");
    const BestMask best = predict_best_mask(*predictor, prompt, context_.mask_threshold);
    reply_json(res, 200,
               {{"success", true},
                {"data", {{"shapes", shapes_of(best, id == kRectangleModel, epsilon_factor)}, {"description", ""}}}});
  }

 private:
  void authorize(const httplib::Request& req) const {
    if (!token_.empty() && req.get_header_value("Token") != token_) {
      throw HttpError(401, "Invalid or missing API Key (the Token header)");
    }
  }

  static HttpError unknown_model(const std::string& id) {
    return HttpError(404, "Model '" + id.substr(0, 64) + "' not loaded; this server has " + kPolygonModel + " and " +
                              kRectangleModel);
  }

  LabellingContext& context_;
  const std::string token_;
};

}  // namespace

json anylabeling_error(int status, const std::string& message) {
  return {{"success", false}, {"error", {{"code", error_code(status)}, {"message", message}}}};
}

void add_anylabeling_routes(httplib::Server& server, const std::string& prefix, LabellingContext& context,
                            const std::string& token) {
  auto api = std::make_shared<AnyLabelingApi>(context, token);
  auto guard = [&context](auto handler) { return guarded(anylabeling_error, context.threads, handler); };
  server.Get(prefix + "/health", guard([api](const httplib::Request&, httplib::Response& res) { api->health(res); }));
  server.Get(prefix + "/v1/models",
             guard([api](const httplib::Request& req, httplib::Response& res) { api->models(req, res); }));
  server.Get(prefix + R"(/v1/models/([^/]+)/info)",
             guard([api](const httplib::Request& req, httplib::Response& res) { api->info(req, res); }));
  server.Post(prefix + "/v1/predict",
              guard([api](const httplib::Request& req, httplib::Response& res) { api->predict(req, res); }));
  server.Post(prefix + R"(/v1/video/.*)", guard([](const httplib::Request&, httplib::Response&) {
                throw HttpError(501, "video tracking is not supported: sam2rt runs the SAM 2.1 image path only; "
                                     "prompt each frame as an image");
              }));
}

}  // namespace sam2rt::cli
