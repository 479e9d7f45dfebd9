#include "api/segment_request.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "api/binary_mask.h"
#include "api/json_body.h"
#include "core/error.h"
#include "io/base64.h"
#include "io/mask_rle.h"
#include "io/png_writer.h"
#include "kernels/bilinear_resize.h"

namespace sam2rt {

namespace {

using nlohmann::json;

std::string number_text(double value) {
  std::ostringstream s;
  s << value;
  return s.str();
}

// A finite JSON number; `what` names it in the error ("points[2][0]").
float finite_number(const json& value, const std::string& what) {
  if (!value.is_number()) throw Error(what + " must be a number, got " + value.dump());
  const double v = value.get<double>();
  if (!std::isfinite(v) || std::fabs(v) > 1e30) throw Error(what + " must be a finite number, got " + value.dump());
  return static_cast<float>(v);
}

void check_inside(float x, float y, int width, int height, const std::string& what) {
  if (x < 0 || y < 0 || x > static_cast<float>(width) || y > static_cast<float>(height)) {
    throw Error(what + " (" + number_text(x) + ", " + number_text(y) + ") is outside the " + std::to_string(width) +
                "x" + std::to_string(height) + " image");
  }
}

PointPrompt parse_point(const json& item, size_t index, int width, int height) {
  const std::string what = "points[" + std::to_string(index) + "]";
  if (!item.is_array() || item.size() < 2 || item.size() > 3) {
    throw Error(what + " must be [x, y] or [x, y, label], got " + item.dump());
  }
  PointPrompt point;
  point.x = finite_number(item[0], what + "[0]");
  point.y = finite_number(item[1], what + "[1]");
  const float label = item.size() == 3 ? finite_number(item[2], what + "[2]") : 1.0f;
  if (label != 0.0f && label != 1.0f) {
    throw Error(what + ": label " + item[2].dump() + " must be 1 (object) or 0 (background)");
  }
  point.label = static_cast<int>(label);
  check_inside(point.x, point.y, width, height, what);
  return point;
}

std::array<float, 4> parse_box(const json& item, int width, int height) {
  if (!item.is_array() || item.size() != 4) throw Error("box must be [x0, y0, x1, y1], got " + item.dump());
  std::array<float, 4> box{};
  for (size_t i = 0; i < 4; ++i) box[i] = finite_number(item[i], "box[" + std::to_string(i) + "]");
  if (box[2] < box[0] || box[3] < box[1]) {
    throw Error("box " + item.dump() + " has x1 < x0 or y1 < y0; give the top-left corner first");
  }
  check_inside(box[0], box[1], width, height, "box corner");
  check_inside(box[2], box[3], width, height, "box corner");
  return box;
}

MaskSize parse_mask_size(const json& item, int width, int height) {
  const auto side = [&item](size_t i, int most) {
    const json& value = item[i];
    if (!value.is_number_integer() || value.get<int64_t>() < 1 || value.get<int64_t>() > most) {
      throw Error("mask_size[" + std::to_string(i) + "] must be a whole number from 1 to " + std::to_string(most) +
                  " (the image's size), got " + value.dump());
    }
    return static_cast<int>(value.get<int64_t>());
  };
  if (!item.is_array() || item.size() != 2) throw Error("mask_size must be [width, height], got " + item.dump());
  return {side(0, width), side(1, height)};
}

}  // namespace

SegmentRequest parse_segment_request(std::string_view body, int image_width, int image_height,
                                     const SegmentLimits& limits) {
  const json request = parse_json_object(body);
  SegmentRequest result;
  for (const auto& [key, value] : request.items()) {
    if (key == "points") {
      if (!value.is_array()) throw Error("points must be an array of [x, y, label], got " + value.dump());
      if (value.size() > static_cast<size_t>(limits.max_points)) {
        throw Error("too many points: " + std::to_string(value.size()) + ", at most " +
                    std::to_string(limits.max_points) + " per request");
      }
      for (size_t i = 0; i < value.size(); ++i) {
        result.prompt.points.push_back(parse_point(value[i], i, image_width, image_height));
      }
    } else if (key == "box") {
      if (!value.is_null()) result.prompt.box = parse_box(value, image_width, image_height);
    } else if (key == "multimask") {
      if (!value.is_boolean()) throw Error("multimask must be true or false, got " + value.dump());
      result.multimask = value.get<bool>();
    } else if (key == "format") {
      if (value == "png") {
        result.format = MaskFormat::png;
      } else if (value == "rle") {
        result.format = MaskFormat::rle;
      } else if (value == "coco_rle") {
        result.format = MaskFormat::coco_rle;
      } else {
        throw Error("format must be \"png\", \"rle\" or \"coco_rle\", got " + value.dump());
      }
    } else if (key == "mask_size") {
      if (!value.is_null()) result.mask_size = parse_mask_size(value, image_width, image_height);
    } else {
      throw Error("unknown field \"" + key.substr(0, 64) +
                  "\" (expected points, box, multimask, format, mask_size)");
    }
  }
  if (result.prompt.points.empty() && !result.prompt.box) {
    throw Error("no prompt: give at least one point in \"points\" or a \"box\"");
  }
  return result;
}

nlohmann::json mask_to_rle(const uint8_t* mask, int width, int height) {
  json counts = json::array();
  bool current = false;
  int64_t run = 0;
  for (int x = 0; x < width; ++x) {
    for (int y = 0; y < height; ++y) {
      const bool on = mask[static_cast<size_t>(y) * static_cast<size_t>(width) + static_cast<size_t>(x)] != 0;
      if (on != current) {
        counts.push_back(run);
        run = 0;
        current = on;
      }
      ++run;
    }
  }
  counts.push_back(run);
  return {{"size", {height, width}}, {"counts", std::move(counts)}};
}

MaskPrediction predict_segment_request(const Predictor& predictor, const SegmentRequest& request) {
  if (!request.mask_size) return predictor.predict(request.prompt, request.multimask);
  MaskPrediction prediction = predictor.predict_batch_low_res({request.prompt}, request.multimask).front();
  prediction.masks = bilinear_resize(prediction.low_res_masks, request.mask_size->height, request.mask_size->width);
  return prediction;
}

nlohmann::json segment_response(const MaskPrediction& prediction, float mask_threshold, MaskFormat format,
                                double decode_ms) {
  const Tensor& logits = prediction.masks;
  const int height = static_cast<int>(logits.dim(1));
  const int width = static_cast<int>(logits.dim(2));
  json masks = json::array();
  for (int64_t m = 0; m < logits.dim(0); ++m) {
    const std::vector<uint8_t> mask = threshold_mask(logits, m, mask_threshold);
    const MaskExtent extent = mask_extent(mask, width, height);
    const auto index = static_cast<size_t>(m);
    json entry = {{"iou", prediction.iou_predictions[index]}, {"area", extent.area}, {"bbox", extent.bbox}};
    if (index < prediction.token_indices.size()) entry["token"] = prediction.token_indices[index];
    switch (format) {
      case MaskFormat::png: entry["png_base64"] = base64_encode(encode_png_gray8(mask.data(), width, height)); break;
      case MaskFormat::rle: entry["rle"] = mask_to_rle(mask.data(), width, height); break;
      case MaskFormat::coco_rle:
        entry["rle"] = {{"size", {height, width}},
                        {"counts", coco_rle_string(encode_rle(mask.data(), height, width))}};
        break;
    }
    masks.push_back(std::move(entry));
  }
  const auto& ious = prediction.iou_predictions;
  const auto best = std::max_element(ious.begin(), ious.end()) - ious.begin();
  return {{"masks", std::move(masks)},
          {"best_index", best},
          {"object_score_logit", prediction.object_score_logit},
          {"mask_size", {width, height}},
          {"timing_ms", {{"decode", decode_ms}}}};
}

}  // namespace sam2rt
