#pragma once

#include <mutex>
#include <string>
#include <vector>

namespace sam2rt {

// Every warning and error the Vulkan validation layers report, in order. The
// debug messenger only records (it runs inside Vulkan calls, where throwing is
// not allowed); tests assert the log is empty after the context is destroyed,
// so messages about leaked objects count too.
class ValidationLog {
 public:
  void add(std::string message) {
    std::lock_guard lock(mutex_);
    messages_.push_back(std::move(message));
  }
  std::vector<std::string> messages() const {
    std::lock_guard lock(mutex_);
    return messages_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> messages_;
};

}  // namespace sam2rt
