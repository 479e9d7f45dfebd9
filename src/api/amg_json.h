#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "api/automatic_mask_generator.h"

namespace sam2rt {

// SAM2AutomaticMaskGenerator's output_mode. In JSON, binary_mask records name a
// PNG file instead of holding the array (see amg_record_json).
enum class AmgOutputMode { binary_mask, uncompressed_rle, coco_rle };

// "binary_mask" | "uncompressed_rle" | "coco_rle"; Error naming the choices otherwise.
AmgOutputMode parse_amg_output_mode(const std::string& name);
std::string amg_output_mode_name(AmgOutputMode mode);

// The 15 official parameters, under their official names (point_grids as null
// or the list of grids).
nlohmann::json amg_params_json(const AmgParams& params, AmgOutputMode mode);

// One official record: segmentation (uncompressed {"size", "counts": [...]},
// COCO {"size", "counts": "<string>"}, or for binary_mask the given PNG file
// name), area, bbox and crop_box (XYWH), predicted_iou, point_coords,
// stability_score.
nlohmann::json amg_record_json(const AmgMask& mask, AmgOutputMode mode, const std::string& png_name = {});

// The whole result of one image in the schema of ../shared/fixtures/amg/README.md
// ("format": "sam2-amg-1", image, image_hw, model, params, masks); png_names:
// for binary_mask, one file name per mask. `sam2rt everything` writes it as
// dump(1) for --json and dump() for each image of a batch.
nlohmann::json amg_report_json(const std::string& image_name, int64_t height, int64_t width,
                               const std::string& model_description, const AmgParams& params, AmgOutputMode mode,
                               const std::vector<AmgMask>& masks, const std::vector<std::string>& png_names = {});

}  // namespace sam2rt
