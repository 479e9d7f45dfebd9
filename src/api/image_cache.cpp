#include "api/image_cache.h"

#include <cstdio>

#include "core/error.h"
#include "model/features.h"

namespace sam2rt {

ImageCache::ImageCache(int64_t budget_bytes) : budget_(budget_bytes), id_bits_(std::random_device{}()) {
  if (budget_bytes <= 0) throw Error("image cache budget must be positive, got " + std::to_string(budget_bytes));
}

int64_t ImageCache::charge(const Predictor& predictor) {
  if (!predictor.has_image()) throw Error("image cache: only predictors with an image can be charged");
  // From the model's shapes, which every image's features have (set_features checks
  // them): features() would download features a device keeps.
  return decoder_feature_shapes(predictor.model().config()).numel() * static_cast<int64_t>(sizeof(float));
}

std::string ImageCache::new_id() {
  char text[33];
  std::snprintf(text, sizeof(text), "%016llx%016llx", static_cast<unsigned long long>(id_bits_()),
                static_cast<unsigned long long>(id_bits_()));
  return text;
}

std::string ImageCache::insert(std::shared_ptr<const Predictor> predictor) {
  if (!predictor || !predictor->has_image()) throw Error("image cache: only predictors with an image can be cached");
  const int64_t bytes = charge(*predictor);
  std::lock_guard lock(mutex_);
  while (!by_recency_.empty() && bytes_ + bytes > budget_) {
    bytes_ -= by_recency_.back().bytes;
    by_id_.erase(by_recency_.back().id);
    by_recency_.pop_back();
  }
  std::string id = new_id();
  while (by_id_.count(id)) id = new_id();
  by_recency_.push_front(Entry{id, std::move(predictor), bytes});
  by_id_[id] = by_recency_.begin();
  bytes_ += bytes;
  return id;
}

std::shared_ptr<const Predictor> ImageCache::find(const std::string& id) {
  std::lock_guard lock(mutex_);
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return nullptr;
  by_recency_.splice(by_recency_.begin(), by_recency_, it->second);
  return it->second->predictor;
}

bool ImageCache::erase(const std::string& id) {
  std::lock_guard lock(mutex_);
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return false;
  bytes_ -= it->second->bytes;
  by_recency_.erase(it->second);
  by_id_.erase(it);
  return true;
}

size_t ImageCache::size() const {
  std::lock_guard lock(mutex_);
  return by_id_.size();
}

int64_t ImageCache::bytes() const {
  std::lock_guard lock(mutex_);
  return bytes_;
}

}  // namespace sam2rt
