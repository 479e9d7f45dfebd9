#include "api/everything_request.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "api/amg_json.h"
#include "api/json_body.h"
#include "core/error.h"

namespace sam2rt {

namespace {

using nlohmann::json;

// A value as the error message quotes it: short, whatever the client sent.
std::string shown(const json& value) {
  const std::string text = value.dump();
  return text.size() <= 80 ? text : text.substr(0, 77) + "...";
}

int integer(const json& value, const std::string& name) {
  constexpr int64_t kMin = std::numeric_limits<int>::min(), kMax = std::numeric_limits<int>::max();
  const bool fits = value.is_number_integer() &&
                    (value.is_number_unsigned() ? value.get<uint64_t>() <= static_cast<uint64_t>(kMax)
                                                : value.get<int64_t>() >= kMin && value.get<int64_t>() <= kMax);
  if (!fits) throw Error(name + " must be an integer, got " + shown(value));
  return static_cast<int>(value.get<int64_t>());
}

double number(const json& value, const std::string& name) {
  if (!value.is_number()) throw Error(name + " must be a number, got " + shown(value));
  const double v = value.get<double>();
  if (!std::isfinite(v)) throw Error(name + " must be a finite number, got " + shown(value));
  return v;
}

bool boolean(const json& value, const std::string& name) {
  if (!value.is_boolean()) throw Error(name + " must be true or false, got " + shown(value));
  return value.get<bool>();
}

std::vector<std::vector<std::array<double, 2>>> point_grids(const json& value) {
  if (value.is_null()) return {};
  if (!value.is_array()) throw Error("point_grids must be an array of grids (one per crop layer), got " + shown(value));
  std::vector<std::vector<std::array<double, 2>>> grids;
  for (size_t g = 0; g < value.size(); ++g) {
    const std::string grid_name = "point_grids[" + std::to_string(g) + "]";
    if (!value[g].is_array()) throw Error(grid_name + " must be an array of [x, y] points, got " + shown(value[g]));
    std::vector<std::array<double, 2>> grid;
    for (size_t p = 0; p < value[g].size(); ++p) {
      const std::string point_name = grid_name + "[" + std::to_string(p) + "]";
      const json& point = value[g][p];
      if (!point.is_array() || point.size() != 2) throw Error(point_name + " must be [x, y], got " + shown(point));
      grid.push_back({number(point[0], point_name + "[0]"), number(point[1], point_name + "[1]")});
    }
    grids.push_back(std::move(grid));
  }
  return grids;
}

template <typename T>
struct Parameter {
  const char* name;
  T AmgParams::*member;
};

constexpr Parameter<int> kIntegers[] = {{"points_per_batch", &AmgParams::points_per_batch},
                                        {"crop_n_layers", &AmgParams::crop_n_layers},
                                        {"crop_n_points_downscale_factor", &AmgParams::crop_n_points_downscale_factor}};
constexpr Parameter<double> kNumbers[] = {{"pred_iou_thresh", &AmgParams::pred_iou_thresh},
                                          {"stability_score_thresh", &AmgParams::stability_score_thresh},
                                          {"stability_score_offset", &AmgParams::stability_score_offset},
                                          {"mask_threshold", &AmgParams::mask_threshold},
                                          {"box_nms_thresh", &AmgParams::box_nms_thresh},
                                          {"crop_nms_thresh", &AmgParams::crop_nms_thresh},
                                          {"crop_overlap_ratio", &AmgParams::crop_overlap_ratio},
                                          {"min_mask_region_area", &AmgParams::min_mask_region_area}};
constexpr Parameter<bool> kBooleans[] = {{"use_m2m", &AmgParams::use_m2m},
                                         {"multimask_output", &AmgParams::multimask_output}};

// The official order of SAM2AutomaticMaskGenerator.__init__, for the error message.
constexpr const char* kNames =
    "points_per_side, points_per_batch, pred_iou_thresh, stability_score_thresh, stability_score_offset, "
    "mask_threshold, box_nms_thresh, crop_n_layers, crop_nms_thresh, crop_overlap_ratio, "
    "crop_n_points_downscale_factor, point_grids, min_mask_region_area, use_m2m, multimask_output";

void set_parameter(AmgParams& params, const std::string& name, const json& value) {
  if (name == "points_per_side") {
    params.points_per_side = value.is_null() ? std::nullopt : std::optional<int>(integer(value, name));
    return;
  }
  if (name == "point_grids") {
    params.point_grids = point_grids(value);
    return;
  }
  for (const auto& p : kIntegers) {
    if (name == p.name) {
      params.*p.member = integer(value, name);
      return;
    }
  }
  for (const auto& p : kNumbers) {
    if (name == p.name) {
      params.*p.member = number(value, name);
      return;
    }
  }
  for (const auto& p : kBooleans) {
    if (name == p.name) {
      params.*p.member = boolean(value, name);
      return;
    }
  }
  throw Error("unknown parameter \"" + name.substr(0, 64) + "\"; the parameters are " + kNames);
}

}  // namespace

AmgParams parse_everything_request(std::string_view body, const EverythingLimits& limits) {
  AmgParams params;
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) body = "{}";
  const json request = parse_json_object(body, "of generator parameters");
  for (const auto& [name, value] : request.items()) set_parameter(params, name, value);
  // Counted before the generator's own checks, which build the grids.
  const int64_t points = everything_point_count(params);
  if (points > limits.max_points) {
    throw Error("too many points: these parameters prompt at " + std::to_string(points) + " grid points, at most " +
                std::to_string(limits.max_points) + " (--max-everything-points); use a smaller points_per_side or "
                "fewer crop layers");
  }
  validate_amg_params(params);
  return params;
}

int64_t everything_point_count(const AmgParams& params) {
  // Saturates instead of overflowing: only the comparison with a limit matters.
  constexpr int64_t kMany = int64_t{1} << 40;
  int64_t total = 0;
  for (int layer = 0; layer <= params.crop_n_layers && total < kMany; ++layer) {
    int64_t per_crop = 0;
    if (params.points_per_side) {
      // Nonsense values (negative, zero) count nothing: the generator's check names them.
      const double side = std::floor(std::max(*params.points_per_side, 0) /
                                     std::pow(std::max(params.crop_n_points_downscale_factor, 1), layer));
      per_crop = static_cast<int64_t>(side * side);
    } else if (static_cast<size_t>(layer) < params.point_grids.size()) {
      per_crop = static_cast<int64_t>(params.point_grids[static_cast<size_t>(layer)].size());
    }
    const double crops = std::pow(4.0, layer);
    total += static_cast<int64_t>(std::min(static_cast<double>(kMany), crops * static_cast<double>(per_crop)));
  }
  return std::min(total, kMany);
}

json everything_response(const std::vector<AmgMask>& masks, double generate_ms) {
  json records = json::array();
  for (const AmgMask& mask : masks) records.push_back(amg_record_json(mask, AmgOutputMode::coco_rle));
  return {{"masks", std::move(records)}, {"generate_ms", generate_ms}};
}

}  // namespace sam2rt
