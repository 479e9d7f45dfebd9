#pragma once

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <string>

#include "serve_state.h"

namespace sam2rt::cli {

// X-AnyLabeling's remote-server API (X-AnyLabeling-Server's docs/router.md, as its
// client anylabeling/services/auto_labeling/remote_server.py calls it) under
// `prefix`: GET /health, GET /v1/models, GET /v1/models/{id}/info, POST
// /v1/predict with a data-URL image and params.marks (points with labels 1/0, one
// rectangle) answered with polygon or rectangle shapes. A non-empty `token` is
// required in the Token header of everything but /health. The video endpoints
// answer 501.
void add_anylabeling_routes(httplib::Server& server, const std::string& prefix, LabellingContext& context,
                            const std::string& token);

// {"success": false, "error": {"code", "message"}}, the server's error shape.
nlohmann::json anylabeling_error(int status, const std::string& message);

}  // namespace sam2rt::cli
