#pragma once

#include <httplib.h>
#include <nlohmann/json.hpp>
#include <omp.h>

#include <cstdio>
#include <functional>
#include <new>
#include <string>

#include "core/error.h"
#include "http_error.h"

namespace sam2rt::cli {

// With the charset parameter httplib leaves the answer uncompressed: for a bare
// "application/json" it picks Brotli at its slowest quality whenever the client
// accepts it (browsers do), which adds about 100 ms to a 50 KB mask answer.
inline constexpr const char* kJsonType = "application/json; charset=utf-8";

inline void reply_json(httplib::Response& res, int status, const nlohmann::json& body) {
  res.status = status;
  res.set_header("Cache-Control", "no-store");
  res.set_content(body.dump(), kJsonType);
}

// A protocol's error body for an HTTP status and a one-line reason
// (`{"error": ...}` for our own API; each labelling tool has its own).
using ErrorBody = std::function<nlohmann::json(int status, const std::string& message)>;

// Runs `handler` so that every failure becomes a JSON error in the protocol's
// shape instead of an exception escaping: HttpError with its status, Error (bad
// input) 400, out of memory 503, anything else 500. `threads` > 0 applies
// --threads: OpenMP thread counts are per thread and the HTTP workers do not
// inherit them.
template <typename Handler>
httplib::Server::Handler guarded(ErrorBody error_body, int threads, Handler handler) {
  return [error_body, threads, handler](const httplib::Request& req, httplib::Response& res) {
    if (threads > 0) omp_set_num_threads(threads);
    try {
      handler(req, res);
    } catch (const HttpError& e) {
      reply_json(res, e.status, error_body(e.status, e.what()));
    } catch (const Error& e) {
      reply_json(res, 400, error_body(400, e.what()));
    } catch (const std::bad_alloc&) {
      reply_json(res, 503, error_body(503, "out of memory; try a smaller image or a smaller --cache-mb"));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "serve: internal error on %s %s: %s\n", req.method.c_str(), req.path.c_str(), e.what());
      reply_json(res, 500, error_body(500, std::string("internal error: ") + e.what()));
    }
  };
}

}  // namespace sam2rt::cli
