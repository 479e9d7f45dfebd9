#include "http_fetch.h"

#include <curl/curl.h>

#include <memory>

#include "core/error.h"
#include "http_download.h"
#include "http_error.h"

namespace sam2rt::cli {

namespace {

constexpr long kMaxRedirects = 3;

struct Body {
  std::string bytes;
  int64_t max_bytes = 0;
  bool too_large = false;
};

size_t append_body(char* data, size_t size, size_t count, void* user) {
  auto* body = static_cast<Body*>(user);
  const size_t bytes = size * count;
  if (static_cast<int64_t>(body->bytes.size() + bytes) > body->max_bytes) {
    body->too_large = true;
    return 0;  // libcurl stops the transfer with CURLE_WRITE_ERROR
  }
  body->bytes.append(data, bytes);
  return bytes;
}

// "https://host" of a URL, for messages: paths and queries may hold tokens.
std::string scheme_and_host(const std::string& url) {
  const size_t host_start = url.find("://");
  if (host_start == std::string::npos) return "the URL";
  const size_t host_end = url.find_first_of("/?#", host_start + 3);
  return url.substr(0, std::min(host_end, url.size())).substr(0, 128);
}

}  // namespace

std::string http_get_limited(const std::string& url, int64_t max_bytes, long timeout_s) {
  try {
    check_http_url(url);
  } catch (const Error&) {
    throw HttpError(400, "only http:// and https:// image URLs can be fetched");
  }
  ensure_curl_initialised();
  const std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) throw HttpError(500, "cannot start an HTTP transfer");
  Body body;
  body.max_bytes = max_bytes;
  char error[CURL_ERROR_SIZE] = {};
  curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl.get(), CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl.get(), CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_MAXREDIRS, kMaxRedirects);
  curl_easy_setopt(curl.get(), CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(max_bytes));
  curl_easy_setopt(curl.get(), CURLOPT_TIMEOUT, timeout_s);
  curl_easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_FAILONERROR, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, append_body);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(curl.get(), CURLOPT_ERRORBUFFER, error);
  const CURLcode code = curl_easy_perform(curl.get());
  if (body.too_large || code == CURLE_FILESIZE_EXCEEDED) {
    throw HttpError(413, "the image at " + scheme_and_host(url) + " is larger than --max-upload-mb");
  }
  if (code != CURLE_OK) {
    long status = 0;
    curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &status);
    throw HttpError(400, "fetching the image from " + scheme_and_host(url) + " failed: " +
                             (code == CURLE_HTTP_RETURNED_ERROR ? "HTTP " + std::to_string(status)
                                                                : std::string(curl_easy_strerror(code))));
  }
  return std::move(body.bytes);
}

}  // namespace sam2rt::cli
