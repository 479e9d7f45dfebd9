#pragma once

#include <cstdio>
#include <list>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>

namespace sam2rt {

// Values under random ids (128 bits as 32 hex digits, not guessable from one
// another), most recently used first: the bookkeeping of a server's caches of
// images and videos, whose owners choose what to drop. Not thread-safe: the
// owner locks.
template <typename Value>
class RecentlyUsed {
 public:
  RecentlyUsed() : id_bits_(std::random_device{}()) {}

  // An id no value has now.
  std::string unused_id() {
    std::string id = random_id();
    while (by_id_.contains(id)) id = random_id();
    return id;
  }

  // Stores `value` under `id` (from unused_id()) as the most recently used.
  void insert(const std::string& id, Value value) {
    if (by_id_.contains(id)) throw std::logic_error("RecentlyUsed: id " + id + " is taken");
    by_recency_.push_front(Entry{id, std::move(value)});
    by_id_[id] = by_recency_.begin();
  }

  // The value under `id`, marked as the most recently used; nullptr when none.
  Value* find(const std::string& id) {
    const auto it = by_id_.find(id);
    if (it == by_id_.end()) return nullptr;
    by_recency_.splice(by_recency_.begin(), by_recency_, it->second);
    return &it->second->value;
  }

  // Takes the value under `id` out; nullopt when none.
  std::optional<Value> erase(const std::string& id) {
    const auto it = by_id_.find(id);
    if (it == by_id_.end()) return std::nullopt;
    std::optional<Value> value(std::move(it->second->value));
    by_recency_.erase(it->second);
    by_id_.erase(it);
    return value;
  }

  // From the least recently used value on, while more() holds: drops each
  // value for which drop(id, value) says so (it may keep some, such as those
  // in use).
  template <typename More, typename Drop>
  void drop_oldest(More more, Drop drop) {
    for (auto it = by_recency_.end(); it != by_recency_.begin() && more();) {
      --it;
      if (!drop(it->id, it->value)) continue;
      by_id_.erase(it->id);
      it = by_recency_.erase(it);
    }
  }

  size_t size() const { return by_id_.size(); }

  void clear() {
    by_id_.clear();
    by_recency_.clear();
  }

 private:
  struct Entry {
    std::string id;
    Value value;
  };

  std::string random_id() {
    char text[33];
    std::snprintf(text, sizeof(text), "%016llx%016llx", static_cast<unsigned long long>(id_bits_()),
                  static_cast<unsigned long long>(id_bits_()));
    return text;
  }

  std::list<Entry> by_recency_;  // most recently used first
  std::unordered_map<std::string, typename std::list<Entry>::iterator> by_id_;
  std::mt19937_64 id_bits_;
};

}  // namespace sam2rt
