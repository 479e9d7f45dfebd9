#include "api/amg_json.h"

#include "core/error.h"

namespace sam2rt {

namespace {

// Boxes as the official records give them after MaskData.to_numpy: numbers in XYWH.
nlohmann::json xywh(const std::array<int64_t, 4>& box) {
  return nlohmann::json::array({static_cast<double>(box[0]), static_cast<double>(box[1]),
                                static_cast<double>(box[2]), static_cast<double>(box[3])});
}

}  // namespace

AmgOutputMode parse_amg_output_mode(const std::string& name) {
  if (name == "binary_mask") return AmgOutputMode::binary_mask;
  if (name == "uncompressed_rle") return AmgOutputMode::uncompressed_rle;
  if (name == "coco_rle") return AmgOutputMode::coco_rle;
  throw Error("output_mode '" + name + "' is not one of binary_mask, uncompressed_rle, coco_rle");
}

std::string amg_output_mode_name(AmgOutputMode mode) {
  switch (mode) {
    case AmgOutputMode::binary_mask: return "binary_mask";
    case AmgOutputMode::uncompressed_rle: return "uncompressed_rle";
    case AmgOutputMode::coco_rle: return "coco_rle";
  }
  return "binary_mask";
}

nlohmann::json amg_params_json(const AmgParams& p, AmgOutputMode mode) {
  nlohmann::json j = {
      {"points_per_side", p.points_per_side ? nlohmann::json(*p.points_per_side) : nlohmann::json(nullptr)},
      {"points_per_batch", p.points_per_batch},
      {"pred_iou_thresh", p.pred_iou_thresh},
      {"stability_score_thresh", p.stability_score_thresh},
      {"stability_score_offset", p.stability_score_offset},
      {"mask_threshold", p.mask_threshold},
      {"box_nms_thresh", p.box_nms_thresh},
      {"crop_n_layers", p.crop_n_layers},
      {"crop_nms_thresh", p.crop_nms_thresh},
      {"crop_overlap_ratio", p.crop_overlap_ratio},
      {"crop_n_points_downscale_factor", p.crop_n_points_downscale_factor},
      {"min_mask_region_area", p.min_mask_region_area},
      {"output_mode", amg_output_mode_name(mode)},
      {"use_m2m", p.use_m2m},
      {"multimask_output", p.multimask_output}};
  if (!p.point_grids.empty()) j["point_grids"] = p.point_grids;
  return j;
}

nlohmann::json amg_record_json(const AmgMask& mask, AmgOutputMode mode, const std::string& png_name) {
  const UncompressedRle& rle = mask.segmentation;
  nlohmann::json segmentation;
  switch (mode) {
    case AmgOutputMode::uncompressed_rle:
      segmentation = {{"size", {rle.height, rle.width}}, {"counts", rle.counts}};
      break;
    case AmgOutputMode::coco_rle:
      segmentation = {{"size", {rle.height, rle.width}}, {"counts", coco_rle_string(rle)}};
      break;
    case AmgOutputMode::binary_mask:
      segmentation = png_name;
      break;
  }
  return {{"segmentation", segmentation},
          {"area", mask.area},
          {"bbox", xywh(mask.bbox)},
          {"predicted_iou", mask.predicted_iou},
          {"point_coords", {{mask.point_coords[0], mask.point_coords[1]}}},
          {"stability_score", mask.stability_score},
          {"crop_box", xywh(mask.crop_box)}};
}

nlohmann::json amg_report_json(const std::string& image_name, int64_t height, int64_t width,
                               const std::string& model_description, const AmgParams& params, AmgOutputMode mode,
                               const std::vector<AmgMask>& masks, const std::vector<std::string>& png_names) {
  nlohmann::json report = {{"format", "sam2-amg-1"},
                           {"image", image_name},
                           {"image_hw", {height, width}},
                           {"model", model_description},
                           {"params", amg_params_json(params, mode)},
                           {"masks", nlohmann::json::array()}};
  for (size_t i = 0; i < masks.size(); ++i) {
    report["masks"].push_back(amg_record_json(masks[i], mode, i < png_names.size() ? png_names[i] : std::string()));
  }
  return report;
}

}  // namespace sam2rt
