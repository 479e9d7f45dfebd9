#pragma once

#include <stdexcept>
#include <string>

namespace sam2rt {

// Every failure the user can cause (bad file, bad prompt, bad config) is reported
// with this type; its message is one line that names the problem and, where
// possible, what to do about it. The CLI prints it and exits nonzero.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace sam2rt
