#pragma once

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <string>

#include "serve_state.h"

namespace sam2rt::cli {

struct LabelStudioOptions {
  // Where the tasks' local images are: Label Studio's media folder (/data/upload/...
  // URLs) or its local-files document root (/data/local-files/?d=...). Empty: only
  // data: URLs are read.
  std::string data_root;
  std::string basic_auth;  // "user:password" required in an Authorization: Basic header; empty: none
  bool polygons = false;   // answer polygonlabels (percent) instead of brushlabels
  bool allow_http = false; // fetch http:// and https:// image URLs (within --max-upload-mb)
};

// Label Studio's ML backend (label-studio-ml-backend's label_studio_ml/api.py, the
// answers of its segment_anything_2_image example) under `prefix`: GET /health and
// GET / ({"status": "UP", ...}), POST /setup, POST /predict (the smart keypoints and
// rectangles of params.context.result, in percent, answered with a brushlabels
// result whose rle is Label Studio's brush RLE, or polygonlabels), POST /webhook
// (201), GET /metrics. `answer_root`: whether GET {prefix}/ answers as /health does
// (not at the server's root, where GET / is the page of serve).
void add_label_studio_routes(httplib::Server& server, const std::string& prefix, bool answer_root,
                             LabellingContext& context, const LabelStudioOptions& options);

// {"status": code, "detail": "..."}, the shape label_studio_ml's exception handler answers.
nlohmann::json label_studio_error(int status, const std::string& message);

}  // namespace sam2rt::cli
