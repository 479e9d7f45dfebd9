#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string_view>
#include <vector>

#include "api/automatic_mask_generator.h"

namespace sam2rt {

// The JSON side of `sam2rt serve`'s POST /v1/images/{id}/everything ("segment
// everything"), kept apart from HTTP so that it can be tested without a server.

struct EverythingLimits {
  // Most grid points over all crops (what the generator decodes, 1-3 masks each):
  // the default 32x32 grid is 1 024, one crop layer adds 4 x 1 024.
  int64_t max_points = 32768;
};

// Parses a JSON object of SAM2AutomaticMaskGenerator's parameters by their
// official names (AmgParams); an omitted one keeps the official default and an
// empty body means all defaults. A malformed body, an unknown name, a value of the
// wrong type, a value the generator refuses (validate_amg_params) or a grid of more
// than limits.max_points points throws Error with a one-line message.
AmgParams parse_everything_request(std::string_view body, const EverythingLimits& limits = {});

// Points the generator prompts with for these parameters: each crop layer's
// grid times its crops (1, then 4, 16, ... as in the official generate_crop_boxes).
int64_t everything_point_count(const AmgParams& params);

// {"masks": [{"segmentation": {"size": [h, w], "counts": "<COCO compressed RLE>"},
//   "area", "bbox", "predicted_iou", "point_coords": [[x, y]], "stability_score",
//   "crop_box"}, ...], "generate_ms"}: the official records of
// SAM2AutomaticMaskGenerator.generate(output_mode="coco_rle"), in its order
// (amg_record_json, as `sam2rt everything` writes them).
nlohmann::json everything_response(const std::vector<AmgMask>& masks, double generate_ms);

}  // namespace sam2rt
