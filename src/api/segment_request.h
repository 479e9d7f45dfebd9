#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/prompt.h"
#include "model/sam_heads.h"

namespace sam2rt {

// The JSON side of `sam2rt serve`'s POST /v1/images/{id}/segment, kept apart
// from HTTP so that it can be tested (and reused) without a server.

enum class MaskFormat { png, rle };

struct SegmentRequest {
  Prompt prompt;
  bool multimask = false;
  MaskFormat format = MaskFormat::png;
};

struct SegmentLimits {
  int max_points = kMaxPoints;
};

// Parses {"points": [[x, y, label], ...], "box": [x0, y0, x1, y1], "multimask": bool,
// "format": "png" | "rle"} for an image of the given size. Coordinates are pixels of
// the original image. Every problem a client can cause (malformed JSON, an unknown or
// mistyped field, a non-finite number, a label other than 0/1, a point or box outside
// [0, width] x [0, height], x1 < x0 or y1 < y0, more than max_points points, no
// prompt at all) throws Error with a one-line message that names the field.
SegmentRequest parse_segment_request(std::string_view body, int image_width, int image_height,
                                     const SegmentLimits& limits = {});

// Binary mask (nonzero = object) as COCO's uncompressed RLE, the format
// pycocotools.mask.frPyObjects reads: {"size": [height, width], "counts": [...]},
// run lengths over the pixels in column-major order, the first run counting zeros
// (so it may be 0).
nlohmann::json mask_to_rle(const uint8_t* mask, int width, int height);

std::string base64_encode(const std::vector<uint8_t>& bytes);

// {"masks": [{"iou", "area", "bbox", "png_base64" | "rle"}, ...], "best",
//  "object_score", "decode_ms"}: every returned mask thresholded at mask_threshold,
// in the predictor's order; bbox is [x0, y0, x1, y1) in pixels, null for an empty
// mask; best is the index of the highest predicted IoU; object_score is the
// decoder's object-presence logit (> 0: an object is there).
nlohmann::json segment_response(const MaskPrediction& prediction, float mask_threshold, MaskFormat format,
                                double decode_ms);

}  // namespace sam2rt
