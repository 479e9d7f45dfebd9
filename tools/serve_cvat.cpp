#include "serve_cvat.h"

#include <algorithm>

#include "api/json_body.h"
#include "io/base64.h"
#include "json_fields.h"
#include "serve_handler.h"

namespace sam2rt::cli {

namespace {

using nlohmann::json;

std::string image_of(const json& body, const LabellingContext& context) {
  std::string image = image_bytes_from_base64_or_data_url(required_string(body, "image", "the request"), "\"image\"");
  if (static_cast<int64_t>(image.size()) > context.max_image_bytes) {
    throw HttpError(413, "the image is larger than --max-upload-mb");
  }
  return image;
}

void add_points(Prompt& prompt, const json& body, const std::string& name, int label) {
  const json& points = required_array(body, name, "the request");
  for (size_t i = 0; i < points.size(); ++i) {
    const std::string where = name + "[" + std::to_string(i) + "]";
    if (!points[i].is_array() || points[i].size() != 2) throw Error(where + " must be [x, y]");
    prompt.points.push_back({static_cast<float>(finite_number(points[i][0], where + " x")),
                             static_cast<float>(finite_number(points[i][1], where + " y")), label});
  }
}

json mask_answer(const BestMask& best) {
  json rows = json::array();
  int x0 = best.width, y0 = best.height, x1 = -1, y1 = -1;
  for (int y = 0; y < best.height; ++y) {
    const uint8_t* row = best.mask.data() + static_cast<size_t>(y) * static_cast<size_t>(best.width);
    rows.push_back(std::vector<int>(row, row + best.width));
    for (int x = 0; x < best.width; ++x) {
      if (!row[x]) continue;
      x0 = std::min(x0, x);
      x1 = std::max(x1, x);
      y0 = std::min(y0, y);
      y1 = std::max(y1, y);
    }
  }
  const json bounds = x1 < 0 ? json(nullptr) : json::array({x0, y0, x1, y1});
  return {{"mask", std::move(rows)}, {"bounds", bounds}};
}

std::string tensor_base64(const Tensor& tensor) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(tensor.data());
  return base64_encode(std::vector<uint8_t>(bytes, bytes + tensor.numel() * static_cast<int64_t>(sizeof(float))));
}

}  // namespace

json cvat_error(int, const std::string& message) { return {{"error", message}}; }

void add_cvat_routes(httplib::Server& server, const std::string& prefix, LabellingContext& context) {
  auto guard = [&context](auto handler) { return guarded(cvat_error, context.threads, handler); };
  server.Post(prefix + "/?", guard([&context](const httplib::Request& req, httplib::Response& res) {
                const json body = parse_json_object(req.body, "with image, pos_points and neg_points");
                const std::string image = image_of(body, context);
                Prompt prompt;
                add_points(prompt, body, "pos_points", 1);
                add_points(prompt, body, "neg_points", 0);
                if (prompt.points.empty()) throw Error("pos_points and neg_points are both empty: click the object");
                const auto predictor = context.images.encoded(image, "\"image\"");
                reply_json(res, 200, mask_answer(predict_best_mask(*predictor, prompt, context.mask_threshold)));
              }));
  server.Post(prefix + "/features", guard([&context](const httplib::Request& req, httplib::Response& res) {
                const json body = parse_json_object(req.body, "with image");
                const auto predictor = context.images.encoded(image_of(body, context), "\"image\"");
                const DecoderFeatures& features = predictor->features();
                reply_json(res, 200,
                           {{"blob", tensor_base64(features.image_embed)},
                            {"high_res_feats_0", tensor_base64(features.feat_s0)},
                            {"high_res_feats_1", tensor_base64(features.feat_s1)},
                            {"shapes",
                             {{"blob", features.image_embed.shape()},
                              {"high_res_feats_0", features.feat_s0.shape()},
                              {"high_res_feats_1", features.feat_s1.shape()}}},
                            {"original_size", {predictor->orig_height(), predictor->orig_width()}}});
              }));
}

}  // namespace sam2rt::cli
