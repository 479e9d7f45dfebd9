#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>

#include "http_error.h"

namespace sam2rt::cli {

// Encoding is the expensive step of `sam2rt serve`: at most `running` at once, and
// at most `waiting` requests queued behind them; the rest are told to retry (503).
class EncodeGate {
 public:
  EncodeGate(int running, int waiting) : max_running_(running), max_waiting_(waiting) {}

  class Slot {
   public:
    explicit Slot(EncodeGate& gate) : gate_(gate) {}
    ~Slot() { gate_.leave(); }
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;

   private:
    EncodeGate& gate_;
  };

  std::unique_ptr<Slot> enter() {
    std::unique_lock lock(mutex_);
    if (running_ >= max_running_ && waiting_ >= max_waiting_) {
      throw HttpError(503, "busy: " + std::to_string(waiting_) + " images are already waiting to be encoded; retry later");
    }
    return wait_for_slot(lock);
  }

  // A slot for work the server has already accepted (a video's propagation,
  // one frame at a time): it waits its turn however many are queued, instead
  // of being told to retry.
  std::unique_ptr<Slot> enter_accepted() {
    std::unique_lock lock(mutex_);
    return wait_for_slot(lock);
  }

 private:
  std::unique_ptr<Slot> wait_for_slot(std::unique_lock<std::mutex>& lock) {
    ++waiting_;
    freed_.wait(lock, [this] { return running_ < max_running_; });
    --waiting_;
    ++running_;
    return std::make_unique<Slot>(*this);
  }

  void leave() {
    {
      std::lock_guard lock(mutex_);
      --running_;
    }
    freed_.notify_one();
  }

  const int max_running_, max_waiting_;
  std::mutex mutex_;
  std::condition_variable freed_;
  int running_ = 0, waiting_ = 0;
};

}  // namespace sam2rt::cli
