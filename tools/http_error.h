#pragma once

#include <stdexcept>
#include <string>

namespace sam2rt::cli {

// A request failure of `sam2rt serve` with its own HTTP status; sam2rt::Error from
// parsing, decoding or validation is a 400.
class HttpError : public std::runtime_error {
 public:
  HttpError(int status, const std::string& message) : std::runtime_error(message), status(status) {}
  int status;
};

}  // namespace sam2rt::cli
