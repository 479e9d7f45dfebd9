#include "kernels/buffer_pool.h"

#include <sys/mman.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <new>

namespace sam2rt {

namespace {

constexpr size_t kAlignment = 64;
constexpr size_t kHugePage = size_t{2} << 20;

void* allocate(size_t bytes) {
  // Large buffers are 2 MiB aligned so transparent huge pages can back them
  // (one fault per 2 MiB instead of per 4 KiB) where the kernel allows it.
  const size_t alignment = bytes >= kHugePage ? kHugePage : kAlignment;
  const size_t rounded = (bytes + alignment - 1) / alignment * alignment;
  void* memory = std::aligned_alloc(alignment, rounded);
  if (!memory) throw std::bad_alloc();
  if (alignment == kHugePage) madvise(memory, rounded, MADV_HUGEPAGE);
  return memory;
}

}  // namespace

struct BufferPool::State {
  mutable std::mutex mutex;
  std::multimap<size_t, void*> idle;  // size class -> buffer

  ~State() {
    for (auto& [size, memory] : idle) std::free(memory);
  }
};

BufferPool::BufferPool() : state_(std::make_shared<State>()) {}

std::shared_ptr<void> BufferPool::bytes(size_t bytes) {
  // Size classes of 1/8 octave keep reuse high without wasting much memory.
  size_t size = kAlignment;
  while (size < bytes) size += std::max(kAlignment, size / 8 / kAlignment * kAlignment);
  void* memory = nullptr;
  {
    std::lock_guard lock(state_->mutex);
    auto it = state_->idle.find(size);
    if (it != state_->idle.end()) {
      memory = it->second;
      state_->idle.erase(it);
    }
  }
  if (!memory) memory = allocate(size);
  std::weak_ptr<State> pool = state_;
  return std::shared_ptr<void>(memory, [pool, size](void* p) {
    if (auto state = pool.lock()) {
      std::lock_guard lock(state->mutex);
      state->idle.emplace(size, p);
    } else {
      std::free(p);
    }
  });
}

Tensor BufferPool::tensor(Shape shape) {
  const int64_t numel = shape_numel(shape);
  std::shared_ptr<void> memory = bytes(static_cast<size_t>(std::max<int64_t>(numel, 1)) * sizeof(float));
  float* data = static_cast<float*>(memory.get());
  return Tensor::view(std::move(shape), data, std::move(memory));
}

size_t BufferPool::idle_buffers() const {
  std::lock_guard lock(state_->mutex);
  return state_->idle.size();
}

size_t BufferPool::idle_bytes() const {
  std::lock_guard lock(state_->mutex);
  size_t total = 0;
  for (const auto& [size, memory] : state_->idle) total += size;
  return total;
}

}  // namespace sam2rt
