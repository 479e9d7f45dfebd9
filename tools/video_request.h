#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "api/segment_request.h"
#include "model/prompt.h"

namespace sam2rt::cli {

// The JSON bodies of `sam2rt serve`'s video endpoints (docs/SERVE.md). Every
// parser throws Error with one line naming the field (a 400).

// The size and length of the video a request is checked against.
struct VideoBounds {
  int64_t frames = 0;
  int width = 0;
  int height = 0;
};

// POST /v1/videos/{id}/prompts: {"frame": F, "obj_id": ID, "points": [[x, y, label], ...],
// "box": [x0, y0, x1, y1], "format": "png" | "rle" | "coco_rle"}. The points and box
// are the object's whole prompt on that frame (one add_new_points_or_box call
// with clear_old_points), checked as the image segment request's are.
struct VideoPromptRequest {
  int64_t frame = 0;
  int64_t obj_id = 0;
  Prompt prompt;
  MaskFormat format = MaskFormat::png;
};
VideoPromptRequest parse_video_prompt_request(std::string_view body, const VideoBounds& video, int max_points);

// POST /v1/videos/{id}/clear: {"frame": F, "obj_id": ID}.
struct ObjectOnFrame {
  int64_t frame = 0;
  int64_t obj_id = 0;
};
ObjectOnFrame parse_object_on_frame(std::string_view body, const VideoBounds& video);

// POST /v1/videos/{id}/propagate: {"reverse": bool, "start_frame": F, "max_frames": N},
// each optional (an empty body: forward from the earliest prompted frame to the end).
struct PropagateRequest {
  bool reverse = false;  // after the forward pass, track backward (as `sam2rt track --reverse`)
  std::optional<int64_t> start_frame;
  std::optional<int64_t> max_frames;
};
PropagateRequest parse_propagate_request(std::string_view body, const VideoBounds& video);

// "png", "rle" or "coco_rle" (the ?format= of GET .../masks/{frame}); Error otherwise.
MaskFormat parse_mask_format(std::string_view text);

// An object id in a URL path or a body: a whole number from 0 to 2^31 - 1.
int64_t parse_obj_id_text(std::string_view text);
// A frame index in a URL path: a whole number inside the video.
int64_t parse_frame_text(std::string_view text, const VideoBounds& video);

}  // namespace sam2rt::cli
