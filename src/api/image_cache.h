#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "api/predictor.h"
#include "core/recently_used.h"

namespace sam2rt {

// Images a server has encoded, each kept as a ready-to-prompt Predictor under a
// random id. The decoder features dominate the memory, so the cache charges each
// entry their size and, when a new image would exceed the budget, drops the
// least recently used ones. A request holding a Predictor keeps it alive even if
// it is evicted meanwhile. Thread-safe.
class ImageCache {
 public:
  explicit ImageCache(int64_t budget_bytes);

  // Takes a predictor whose image is set and returns its new id. The newest image
  // always stays, even when it alone is larger than the budget.
  std::string insert(std::shared_ptr<const Predictor> predictor);
  // nullptr for an unknown (or evicted) id; otherwise marks the image as used.
  std::shared_ptr<const Predictor> find(const std::string& id);
  bool erase(const std::string& id);

  size_t size() const;
  int64_t bytes() const;
  int64_t budget() const { return budget_; }

  // What an entry is charged: the bytes of its decoder features (float32), on the
  // host or on the device that keeps them.
  static int64_t charge(const Predictor& predictor);

 private:
  struct Cached {
    std::shared_ptr<const Predictor> predictor;
    int64_t bytes = 0;
  };

  const int64_t budget_;
  mutable std::mutex mutex_;
  RecentlyUsed<Cached> images_;
  int64_t bytes_ = 0;
};

}  // namespace sam2rt
