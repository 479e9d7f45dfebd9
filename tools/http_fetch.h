#pragma once

#include <cstdint>
#include <string>

namespace sam2rt::cli {

// The body of a GET of an http:// or https:// URL, held in memory: at most
// `max_bytes` (a larger answer, announced or not, throws HttpError 413 as soon as
// it shows), following at most 3 redirects to http(s) only, within `timeout_s`.
// Any other failure (another scheme, no connection, an HTTP error status) throws
// HttpError 400 with one line that names the URL's scheme and host, never its body.
std::string http_get_limited(const std::string& url, int64_t max_bytes, long timeout_s);

}  // namespace sam2rt::cli
