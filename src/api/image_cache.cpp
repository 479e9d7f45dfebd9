#include "api/image_cache.h"

#include "core/error.h"
#include "model/features.h"

namespace sam2rt {

ImageCache::ImageCache(int64_t budget_bytes) : budget_(budget_bytes) {
  if (budget_bytes <= 0) throw Error("image cache budget must be positive, got " + std::to_string(budget_bytes));
}

int64_t ImageCache::charge(const Predictor& predictor) {
  if (!predictor.has_image()) throw Error("image cache: only predictors with an image can be charged");
  // From the model's shapes, which every image's features have (set_features checks
  // them): features() would download features a device keeps.
  return decoder_feature_shapes(predictor.model().config()).numel() * static_cast<int64_t>(sizeof(float));
}

std::string ImageCache::insert(std::shared_ptr<const Predictor> predictor) {
  if (!predictor || !predictor->has_image()) throw Error("image cache: only predictors with an image can be cached");
  const int64_t bytes = charge(*predictor);
  std::lock_guard lock(mutex_);
  images_.drop_oldest([&] { return bytes_ + bytes > budget_; },
                      [&](const std::string&, const Cached& cached) {
                        bytes_ -= cached.bytes;
                        return true;
                      });
  std::string id = images_.unused_id();
  images_.insert(id, Cached{std::move(predictor), bytes});
  bytes_ += bytes;
  return id;
}

std::shared_ptr<const Predictor> ImageCache::find(const std::string& id) {
  std::lock_guard lock(mutex_);
  const Cached* cached = images_.find(id);
  return cached ? cached->predictor : nullptr;
}

bool ImageCache::erase(const std::string& id) {
  std::lock_guard lock(mutex_);
  const std::optional<Cached> cached = images_.erase(id);
  if (!cached) return false;
  bytes_ -= cached->bytes;
  return true;
}

size_t ImageCache::size() const {
  std::lock_guard lock(mutex_);
  return images_.size();
}

int64_t ImageCache::bytes() const {
  std::lock_guard lock(mutex_);
  return bytes_;
}

}  // namespace sam2rt
