#pragma once

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <string>

#include "serve_state.h"

namespace sam2rt::cli {

// CVAT's interactor, as its SAM 2 serverless function takes it
// (serverless/pytorch/facebookresearch/sam2/nuclio/main.py) under `prefix`:
//   POST {prefix}/          {"image": base64, "pos_points": [[x, y], ...], "neg_points": [...]}
//                           -> {"mask": rows of 0/255, "bounds": [x0, y0, x1, y1]} (inclusive)
//   POST {prefix}/features  {"image": base64} -> the decoder-ready features as base64
//                           float32 (NCHW), for clients that run the mask decoder themselves
//                           (CVAT's SAM plugin decodes in the browser: its "blob" is image_embed)
// Errors are {"error": "..."} as the function sends them.
void add_cvat_routes(httplib::Server& server, const std::string& prefix, LabellingContext& context);

nlohmann::json cvat_error(int status, const std::string& message);

}  // namespace sam2rt::cli
