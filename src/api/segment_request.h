#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/predictor.h"
#include "model/prompt.h"
#include "model/sam_heads.h"

namespace sam2rt {

// The JSON side of `sam2rt serve`'s POST /v1/images/{id}/segment, kept apart
// from HTTP so that it can be tested (and reused) without a server.

// png: 8-bit grayscale PNG; rle: COCO uncompressed RLE (counts as numbers);
// coco_rle: COCO compressed RLE (counts as pycocotools' string).
enum class MaskFormat { png, rle, coco_rle };

// Width and height of the masks a response carries.
struct MaskSize {
  int width = 0;
  int height = 0;
};

struct SegmentRequest {
  Prompt prompt;
  bool multimask = false;
  MaskFormat format = MaskFormat::png;
  // Masks at this size instead of the image's (a page asks for the size it shows):
  // the low-res logits resized straight to it, as they are to the image's size.
  std::optional<MaskSize> mask_size;
};

struct SegmentLimits {
  int max_points = kMaxPoints;
};

// Parses {"points": [[x, y, label], ...], "box": [x0, y0, x1, y1], "multimask": bool,
// "format": "png" | "rle" | "coco_rle", "mask_size": [width, height]} for an image of
// the given size. Coordinates are pixels of the original image; a point's label may
// be left out ([x, y]) and is then 1 (object), as on the command line. Every problem
// a client can cause (malformed JSON, an unknown or mistyped field, a non-finite
// number, a label other than 0/1, a point or box outside [0, width] x [0, height],
// x1 < x0 or y1 < y0, more than max_points points, no prompt at all, a mask_size
// outside 1..the image's size) throws Error with a one-line message that names the field.
SegmentRequest parse_segment_request(std::string_view body, int image_width, int image_height,
                                     const SegmentLimits& limits = {});

// Binary mask (nonzero = object) as COCO's uncompressed RLE, the format
// pycocotools.mask.frPyObjects reads: {"size": [height, width], "counts": [...]},
// run lengths over the pixels in column-major order, the first run counting zeros
// (so it may be 0).
nlohmann::json mask_to_rle(const uint8_t* mask, int width, int height);

// The prediction for a request: Predictor::predict, or with a mask_size the same
// decoder output whose logits `masks` holds at that size (bilinear, as to the
// image's size, so at the image's size it is predict's).
MaskPrediction predict_segment_request(const Predictor& predictor, const SegmentRequest& request);

// {"masks": [{"iou", "area", "bbox", "token", "png_base64" | "rle"}, ...],
//  "best_index", "object_score_logit", "mask_size", "timing_ms": {"decode"}}, the
// names `sam2rt segment --json` uses: every returned mask thresholded at
// mask_threshold, in the predictor's order; area and bbox ([x0, y0, x1, y1) or null
// for an empty mask) are in pixels of mask_size ([width, height], the masks' size);
// token is the mask token behind the mask; best_index is the index of the highest
// predicted IoU; object_score_logit is the decoder's object-presence logit (> 0: an
// object is there).
nlohmann::json segment_response(const MaskPrediction& prediction, float mask_threshold, MaskFormat format,
                                double decode_ms);

}  // namespace sam2rt
