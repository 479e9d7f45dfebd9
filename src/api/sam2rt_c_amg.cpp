#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/automatic_mask_generator.h"
#include "api/sam2rt_c.h"
#include "api/sam2rt_c_internal.h"
#include "core/error.h"
#include "io/mask_rle.h"

struct sam2rt_amg {
  sam2rt::AutomaticMaskGenerator generator;
};

struct sam2rt_amg_result {
  std::vector<sam2rt::AmgMask> masks;
  std::vector<std::string> coco_rle;  // per mask, made once so that the pointers handed out stay valid
};

using sam2rt::c_api::guarded;

namespace {

sam2rt::AmgParams amg_params_of(const sam2rt_amg_params& c) {
  sam2rt::AmgParams params;
  params.points_per_side = c.points_per_side == 0 ? std::nullopt : std::optional<int>(c.points_per_side);
  params.points_per_batch = c.points_per_batch;
  params.pred_iou_thresh = c.pred_iou_thresh;
  params.stability_score_thresh = c.stability_score_thresh;
  params.stability_score_offset = c.stability_score_offset;
  params.mask_threshold = c.mask_threshold;
  params.box_nms_thresh = c.box_nms_thresh;
  params.crop_n_layers = c.crop_n_layers;
  params.crop_nms_thresh = c.crop_nms_thresh;
  params.crop_overlap_ratio = c.crop_overlap_ratio;
  params.crop_n_points_downscale_factor = c.crop_n_points_downscale_factor;
  params.min_mask_region_area = c.min_mask_region_area;
  params.use_m2m = c.use_m2m != 0;
  params.multimask_output = c.multimask_output != 0;
  if (c.num_point_grids < 0) throw sam2rt::Error("num_point_grids must be >= 0");
  if (c.num_point_grids > 0 && (!c.point_grid_sizes || !c.point_grids)) {
    throw sam2rt::Error("point_grid_sizes and point_grids must not be NULL when num_point_grids > 0");
  }
  const double* xy = c.point_grids;
  for (int32_t g = 0; g < c.num_point_grids; ++g) {
    if (c.point_grid_sizes[g] < 0) throw sam2rt::Error("point_grid_sizes[" + std::to_string(g) + "] is negative");
    auto& grid = params.point_grids.emplace_back();
    for (int32_t i = 0; i < c.point_grid_sizes[g]; ++i, xy += 2) grid.push_back({xy[0], xy[1]});
  }
  sam2rt::validate_amg_params(params);
  return params;
}

sam2rt_amg_result* generate(const sam2rt_amg* amg, const sam2rt::RgbImage& image, sam2rt_amg_progress progress,
                            void* user_data) {
  sam2rt::AmgProgress report;
  if (progress) report = [progress, user_data](int64_t done, int64_t total) { progress(done, total, user_data); };
  auto result = std::make_unique<sam2rt_amg_result>();
  result->masks = amg->generator.generate(image, report);
  result->coco_rle.reserve(result->masks.size());
  for (const sam2rt::AmgMask& mask : result->masks) result->coco_rle.push_back(sam2rt::coco_rle_string(mask.segmentation));
  return result.release();
}

const sam2rt::AmgMask& mask_at(const sam2rt_amg_result* result, int64_t index) {
  if (!result) throw sam2rt::Error("result is NULL");
  if (index < 0 || index >= static_cast<int64_t>(result->masks.size())) {
    throw sam2rt::Error("mask index " + std::to_string(index) + " is outside [0, " +
                        std::to_string(result->masks.size()) + ")");
  }
  return result->masks[static_cast<size_t>(index)];
}

}  // namespace

extern "C" {

sam2rt_amg_params sam2rt_amg_params_default(void) {
  const sam2rt::AmgParams defaults;
  sam2rt_amg_params c{};
  c.points_per_side = defaults.points_per_side.value_or(0);
  c.points_per_batch = defaults.points_per_batch;
  c.pred_iou_thresh = defaults.pred_iou_thresh;
  c.stability_score_thresh = defaults.stability_score_thresh;
  c.stability_score_offset = defaults.stability_score_offset;
  c.mask_threshold = defaults.mask_threshold;
  c.box_nms_thresh = defaults.box_nms_thresh;
  c.crop_n_layers = defaults.crop_n_layers;
  c.crop_nms_thresh = defaults.crop_nms_thresh;
  c.crop_overlap_ratio = defaults.crop_overlap_ratio;
  c.crop_n_points_downscale_factor = defaults.crop_n_points_downscale_factor;
  c.min_mask_region_area = defaults.min_mask_region_area;
  c.use_m2m = defaults.use_m2m ? 1 : 0;
  c.multimask_output = defaults.multimask_output ? 1 : 0;
  return c;
}

sam2rt_amg* sam2rt_amg_new(const sam2rt_model* model, const sam2rt_amg_params* params) {
  return guarded(
      [&]() -> sam2rt_amg* {
        if (!model) throw sam2rt::Error("model is NULL");
        return new sam2rt_amg{
            sam2rt::AutomaticMaskGenerator(model->model, amg_params_of(params ? *params : sam2rt_amg_params_default()))};
      },
      nullptr);
}

void sam2rt_amg_free(sam2rt_amg* amg) { delete amg; }

sam2rt_amg_result* sam2rt_amg_generate_file(const sam2rt_amg* amg, const char* image_path,
                                            sam2rt_amg_progress progress, void* user_data) {
  return guarded(
      [&]() -> sam2rt_amg_result* {
        if (!amg || !image_path) throw sam2rt::Error("amg or image_path is NULL");
        return generate(amg, sam2rt::decode_image_file(image_path), progress, user_data);
      },
      nullptr);
}

sam2rt_amg_result* sam2rt_amg_generate_rgb(const sam2rt_amg* amg, const uint8_t* rgb, int32_t width, int32_t height,
                                           sam2rt_amg_progress progress, void* user_data) {
  return guarded(
      [&]() -> sam2rt_amg_result* {
        if (!amg) throw sam2rt::Error("amg is NULL");
        return generate(amg, sam2rt::c_api::rgb_image(rgb, width, height), progress, user_data);
      },
      nullptr);
}

int64_t sam2rt_amg_result_count(const sam2rt_amg_result* result) {
  return guarded(
      [&]() -> int64_t {
        if (!result) throw sam2rt::Error("result is NULL");
        return static_cast<int64_t>(result->masks.size());
      },
      -1);
}

int sam2rt_amg_result_get(const sam2rt_amg_result* result, int64_t index, sam2rt_amg_mask* out) {
  return guarded(
      [&] {
        if (!out) throw sam2rt::Error("out is NULL");
        const sam2rt::AmgMask& mask = mask_at(result, index);
        *out = sam2rt_amg_mask{};
        out->height = mask.segmentation.height;
        out->width = mask.segmentation.width;
        out->rle_counts = mask.segmentation.counts.data();
        out->num_rle_counts = static_cast<int64_t>(mask.segmentation.counts.size());
        out->coco_rle = result->coco_rle[static_cast<size_t>(index)].c_str();
        out->area = mask.area;
        std::copy(mask.bbox.begin(), mask.bbox.end(), out->bbox);
        out->predicted_iou = mask.predicted_iou;
        std::copy(mask.point_coords.begin(), mask.point_coords.end(), out->point_coords);
        out->stability_score = mask.stability_score;
        std::copy(mask.crop_box.begin(), mask.crop_box.end(), out->crop_box);
        return 0;
      },
      1);
}

int sam2rt_amg_result_decode_mask(const sam2rt_amg_result* result, int64_t index, uint8_t* mask, int64_t mask_bytes) {
  return guarded(
      [&] {
        if (!mask) throw sam2rt::Error("mask is NULL");
        const sam2rt::UncompressedRle& rle = mask_at(result, index).segmentation;
        if (mask_bytes < rle.height * rle.width) {
          throw sam2rt::Error("mask_bytes is " + std::to_string(mask_bytes) + " but the mask needs height * width = " +
                              std::to_string(rle.height * rle.width));
        }
        const std::vector<uint8_t> pixels = sam2rt::decode_rle(rle);
        std::copy(pixels.begin(), pixels.end(), mask);
        return 0;
      },
      1);
}

void sam2rt_amg_result_free(sam2rt_amg_result* result) { delete result; }

}  // extern "C"
