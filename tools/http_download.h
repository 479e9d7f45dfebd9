#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace sam2rt::cli {

struct HttpDownloadOptions {
  std::string url;             // http:// or https:// only
  std::string ca_file;         // PEM certificates to trust instead of the system's; empty: the system's
  long connect_timeout_s = 15; // per connection attempt
  long stall_timeout_s = 30;   // give up after this long below 1 KiB/s
};

// Bytes in the part file so far and the size of the whole resource (0 while unknown).
using DownloadProgressFn = std::function<void(uint64_t have, uint64_t total)>;

struct DownloadOutcome {
  uint64_t bytes = 0;         // size of the part file, now complete as far as HTTP can tell
  uint64_t resumed_from = 0;  // bytes that were already there and kept
  bool started_over = false;  // the server ignored the range request
};

// libcurl's global set-up, once per process (thread-safe); before any transfer.
void ensure_curl_initialised();

// Throws Error unless `url` is an http:// or https:// URL (file://, ftp:// ... are refused).
void check_http_url(const std::string& url);

// Brings `part_path` up to the complete resource at options.url: when the file
// already holds bytes it asks only for the rest (an HTTP Range request) and
// appends them, and starts over when the server sends the whole resource
// instead. `on_progress` is called from the transfer as bytes arrive (and once
// with the resumed size before that). Failures throw Error with one line; the
// bytes received so far stay in `part_path`, so a rerun resumes.
DownloadOutcome download_resumable(const HttpDownloadOptions& options, const std::string& part_path,
                                   const DownloadProgressFn& on_progress);

}  // namespace sam2rt::cli
