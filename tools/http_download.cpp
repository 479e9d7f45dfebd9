#include "http_download.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <memory>

#include "core/error.h"

namespace sam2rt::cli {

namespace {

constexpr long kStallBytesPerSecond = 1024;
constexpr long kMaxRedirects = 10;

// The partial file, opened for appending and locked so that two downloads of
// the same file cannot interleave their bytes.
class PartFile {
 public:
  explicit PartFile(std::string path) : path_(std::move(path)) {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0) throw Error("cannot open '" + path_ + "' for writing: " + std::strerror(errno));
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd_);
      throw Error("'" + path_ + "' is being written by another download; wait for it to finish");
    }
  }
  ~PartFile() { ::close(fd_); }
  PartFile(const PartFile&) = delete;
  PartFile& operator=(const PartFile&) = delete;

  const std::string& path() const { return path_; }

  uint64_t size() const {
    struct stat info {};
    if (::fstat(fd_, &info) != 0) throw Error("cannot read the size of '" + path_ + "': " + std::strerror(errno));
    return static_cast<uint64_t>(info.st_size);
  }

  void truncate() {
    if (::ftruncate(fd_, 0) != 0) throw Error("cannot truncate '" + path_ + "': " + std::strerror(errno));
  }

  // False (and write_error() says why) when the bytes could not all be written.
  bool append(const char* data, size_t bytes) {
    while (bytes > 0) {
      const ssize_t written = ::write(fd_, data, bytes);
      if (written < 0) {
        if (errno == EINTR) continue;
        write_error_ = std::strerror(errno);
        return false;
      }
      data += written;
      bytes -= static_cast<size_t>(written);
    }
    return true;
  }

  const std::string& write_error() const { return write_error_; }

  void sync() {
    if (::fsync(fd_) != 0) throw Error("cannot flush '" + path_ + "' to disk: " + std::strerror(errno));
  }

 private:
  std::string path_;
  int fd_ = -1;
  std::string write_error_;
};

// `prefix` is lower case.
bool starts_with_ignoring_case(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() &&
         std::equal(prefix.begin(), prefix.end(), text.begin(),
                    [](char lower, char c) { return std::tolower(static_cast<unsigned char>(c)) == lower; });
}

uint64_t parse_decimal(std::string_view digits) {
  uint64_t value = 0;
  for (char c : digits) {
    if (c < '0' || c > '9' || value > (UINT64_MAX - 9) / 10) break;
    value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  return value;
}

std::string_view trimmed(std::string_view text) {
  const size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string_view::npos) return {};
  return text.substr(begin, text.find_last_not_of(" \t\r\n") - begin + 1);
}

// One attempt: a GET from `offset` (a Range request when it is not 0),
// appending the body to the part file.
class Transfer {
 public:
  Transfer(PartFile& file, uint64_t offset, const DownloadProgressFn& on_progress)
      : file_(file), offset_(offset), on_progress_(on_progress) {}

  uint64_t offset() const { return offset_; }
  // The whole resource's size as the final response states it; 0 when it does not.
  uint64_t total() const { return total_; }

  static size_t on_body(char* data, size_t size, size_t count, void* self) {
    auto& transfer = *static_cast<Transfer*>(self);
    const size_t bytes = size * count;
    if (!transfer.file_.append(data, bytes)) return 0;
    transfer.received_ += bytes;
    if (transfer.on_progress_) transfer.on_progress_(transfer.offset_ + transfer.received_, transfer.total_);
    return bytes;
  }

  // Every header line of every response (redirects included); the last
  // response's Content-Length or Content-Range gives the resource's size.
  static size_t on_header(char* data, size_t size, size_t count, void* self) {
    auto& transfer = *static_cast<Transfer*>(self);
    const std::string_view line(data, size * count);
    if (starts_with_ignoring_case(line, "http/")) {
      const size_t space = line.find(' ');
      transfer.status_ = space == std::string_view::npos ? 0 : parse_decimal(line.substr(space + 1));
      transfer.total_ = 0;
    } else if (starts_with_ignoring_case(line, "content-length:")) {
      // A 206 carries the rest from the offset; anything else the whole file.
      const uint64_t length = parse_decimal(trimmed(line.substr(15)));
      if (transfer.total_ == 0) transfer.total_ = transfer.status_ == 206 ? transfer.offset_ + length : length;
    } else if (starts_with_ignoring_case(line, "content-range:")) {
      const std::string_view range = trimmed(line.substr(14));
      const size_t slash = range.rfind('/');
      if (slash != std::string_view::npos && range.substr(slash + 1) != "*") {
        transfer.total_ = parse_decimal(range.substr(slash + 1));
      }
    }
    return size * count;
  }

 private:
  PartFile& file_;
  uint64_t offset_;
  const DownloadProgressFn& on_progress_;
  uint64_t received_ = 0;
  uint64_t status_ = 0;
  uint64_t total_ = 0;
};

using CurlHandle = std::unique_ptr<CURL, decltype(&curl_easy_cleanup)>;

template <typename Value>
void set_option(CURL* curl, CURLoption option, Value value) {
  if (curl_easy_setopt(curl, option, value) != CURLE_OK) {
    throw Error("this libcurl lacks an option sam2rt needs (" + std::to_string(static_cast<int>(option)) + ")");
  }
}

struct AttemptResult {
  CURLcode code = CURLE_OK;
  long http_status = 0;
  uint64_t total = 0;
  std::string detail;
};

AttemptResult attempt(const HttpDownloadOptions& options, Transfer& transfer) {
  CurlHandle curl(curl_easy_init(), &curl_easy_cleanup);
  if (!curl) throw Error("cannot start a libcurl transfer");
  char error_text[CURL_ERROR_SIZE] = {};
  CURL* c = curl.get();
  set_option(c, CURLOPT_URL, options.url.c_str());
  set_option(c, CURLOPT_PROTOCOLS_STR, "http,https");
  set_option(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  set_option(c, CURLOPT_FOLLOWLOCATION, 1L);
  set_option(c, CURLOPT_MAXREDIRS, kMaxRedirects);
  set_option(c, CURLOPT_FAILONERROR, 1L);
  set_option(c, CURLOPT_NOSIGNAL, 1L);
  set_option(c, CURLOPT_USERAGENT, "sam2rt/0.1.0");
  set_option(c, CURLOPT_CONNECTTIMEOUT, options.connect_timeout_s);
  set_option(c, CURLOPT_LOW_SPEED_LIMIT, kStallBytesPerSecond);
  set_option(c, CURLOPT_LOW_SPEED_TIME, options.stall_timeout_s);
  set_option(c, CURLOPT_ERRORBUFFER, error_text);
  if (!options.ca_file.empty()) set_option(c, CURLOPT_CAINFO, options.ca_file.c_str());
  set_option(c, CURLOPT_RESUME_FROM_LARGE, static_cast<curl_off_t>(transfer.offset()));
  set_option(c, CURLOPT_WRITEFUNCTION, &Transfer::on_body);
  set_option(c, CURLOPT_WRITEDATA, static_cast<void*>(&transfer));
  set_option(c, CURLOPT_HEADERFUNCTION, &Transfer::on_header);
  set_option(c, CURLOPT_HEADERDATA, static_cast<void*>(&transfer));

  AttemptResult result;
  result.code = curl_easy_perform(c);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &result.http_status);
  result.total = transfer.total();
  result.detail = error_text[0] != '\0' ? std::string(error_text) : std::string(curl_easy_strerror(result.code));
  return result;
}

std::string failure_detail(const AttemptResult& result, const PartFile& file) {
  if (result.code == CURLE_HTTP_RETURNED_ERROR) return "the server answered HTTP " + std::to_string(result.http_status);
  if (result.code == CURLE_WRITE_ERROR && !file.write_error().empty()) {
    return "cannot write '" + file.path() + "': " + file.write_error();
  }
  return result.detail;
}

class CurlLibrary {
 public:
  CurlLibrary() {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) throw Error("cannot initialise libcurl");
  }
  ~CurlLibrary() { curl_global_cleanup(); }
  CurlLibrary(const CurlLibrary&) = delete;
  CurlLibrary& operator=(const CurlLibrary&) = delete;
};

}  // namespace

void ensure_curl_initialised() { static const CurlLibrary library; }

void check_http_url(const std::string& url) {
  if (!starts_with_ignoring_case(url, "https://") && !starts_with_ignoring_case(url, "http://")) {
    throw Error("only https:// and http:// URLs can be downloaded, not '" + url + "'");
  }
}

DownloadOutcome download_resumable(const HttpDownloadOptions& options, const std::string& part_path,
                                   const DownloadProgressFn& on_progress) {
  check_http_url(options.url);
  ensure_curl_initialised();
  PartFile file(part_path);
  DownloadOutcome outcome;
  outcome.resumed_from = file.size();
  if (on_progress) on_progress(outcome.resumed_from, 0);

  AttemptResult result;
  for (;;) {
    Transfer transfer(file, file.size(), on_progress);
    result = attempt(options, transfer);
    // Start over (once) when libcurl refuses a 200 answer to a Range request (the
    // server cannot resume), or when the part holds more bytes than the file has.
    const bool cannot_resume = result.code == CURLE_RANGE_ERROR;
    const bool overlong = result.total != 0 && file.size() > result.total;
    if (transfer.offset() == 0 || !(cannot_resume || overlong)) break;
    file.truncate();
    outcome.resumed_from = 0;
    outcome.started_over = true;
  }
  // 416: the range starts at the end, so the part file already holds every byte.
  const bool already_complete = result.code == CURLE_HTTP_RETURNED_ERROR && result.http_status == 416 &&
                                outcome.resumed_from > 0;
  outcome.bytes = file.size();
  if (result.code != CURLE_OK && !already_complete) {
    std::string message = "download of " + options.url + " failed: " + failure_detail(result, file);
    if (outcome.bytes == 0) {
      ::unlink(part_path.c_str());
    } else {
      message += "; the " + std::to_string(outcome.bytes) + " bytes received so far are kept in '" + part_path +
                 "': run the same command again to resume";
    }
    throw Error(message);
  }
  if (result.total != 0 && outcome.bytes != result.total && !already_complete) {
    throw Error("download of " + options.url + " ended at byte " + std::to_string(outcome.bytes) + " of " +
                std::to_string(result.total) + "; run the same command again to resume");
  }
  file.sync();
  return outcome;
}

}  // namespace sam2rt::cli
