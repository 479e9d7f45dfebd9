#include "kernels/buffer_pool.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>

namespace sam2rt {

namespace {

constexpr size_t kHeapAlignment = 64;
constexpr size_t kGranule = 4096;  // arena blocks are whole pages
constexpr size_t kMaxArena = size_t{64} << 30;

size_t round_up(size_t value, size_t multiple) { return (value + multiple - 1) / multiple * multiple; }

// Address space for the arena: as large as physical memory (at most 64 GiB),
// reserved without committing it, so only pages actually used cost memory.
size_t arena_capacity() {
  const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return 0;
  return std::min(kMaxArena, round_up(static_cast<size_t>(pages) * static_cast<size_t>(page_size), kGranule));
}

}  // namespace

struct BufferPool::State {
  mutable std::mutex mutex;
  bool reserved = false;  // the arena is reserved on first use
  char* base = nullptr;   // null when the reservation failed
  size_t capacity = 0;
  std::map<size_t, size_t> free;  // offset -> size: address-ordered, neighbours merged
  size_t in_use = 0, high_water = 0;

  ~State() {
    if (base) munmap(base, capacity);
  }

  void reserve() {
    reserved = true;
    const size_t size = arena_capacity();
    if (size == 0) return;
    // Plain pages, as Tensor's: no transparent huge pages asked for (core/tensor.cpp says why).
    void* memory = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (memory == MAP_FAILED) return;
    base = static_cast<char*>(memory);
    capacity = size;
    free.emplace(0, size);
  }

  // First fit, lowest address first; nullptr when nothing fits. Mutex held.
  char* take(size_t size) {
    if (!reserved) reserve();
    for (auto it = free.begin(); it != free.end(); ++it) {
      if (it->second < size) continue;
      const size_t offset = it->first, left = it->second - size;
      free.erase(it);
      if (left != 0) free.emplace(offset + size, left);
      in_use += size;
      high_water = std::max(high_water, offset + size);
      return base + offset;
    }
    return nullptr;
  }

  void give_back(char* memory, size_t size) {
    std::lock_guard lock(mutex);
    in_use -= size;
    size_t offset = static_cast<size_t>(memory - base);
    auto next = free.lower_bound(offset);
    if (next != free.end() && next->first == offset + size) {
      size += next->second;
      next = free.erase(next);
    }
    if (next != free.begin()) {
      auto previous = std::prev(next);
      if (previous->first + previous->second == offset) {
        previous->second += size;
        return;
      }
    }
    free.emplace(offset, size);
  }
};

BufferPool::BufferPool() : state_(std::make_shared<State>()) {}

BufferPool& BufferPool::shared() {
  static BufferPool pool;
  return pool;
}

std::shared_ptr<void> BufferPool::bytes(size_t bytes) {
  const size_t size = round_up(std::max<size_t>(bytes, 1), kGranule);
  char* memory = nullptr;
  {
    std::lock_guard lock(state_->mutex);
    memory = state_->take(size);
  }
  if (memory) {
    // The buffer keeps the arena alive, so it may outlive the pool object.
    std::shared_ptr<State> state = state_;
    return std::shared_ptr<void>(memory, [state, size](void* p) { state->give_back(static_cast<char*>(p), size); });
  }
  void* heap = std::aligned_alloc(kHeapAlignment, round_up(std::max<size_t>(bytes, 1), kHeapAlignment));
  if (!heap) throw std::bad_alloc();
  return std::shared_ptr<void>(heap, [](void* p) { std::free(p); });
}

Tensor BufferPool::tensor(Shape shape) {
  const int64_t numel = shape_numel(shape);
  std::shared_ptr<void> memory = bytes(static_cast<size_t>(std::max<int64_t>(numel, 1)) * sizeof(float));
  float* data = static_cast<float*>(memory.get());
  return Tensor::view(std::move(shape), data, std::move(memory));
}

size_t BufferPool::bytes_in_use() const {
  std::lock_guard lock(state_->mutex);
  return state_->in_use;
}

size_t BufferPool::bytes_reserved() const {
  std::lock_guard lock(state_->mutex);
  return state_->high_water;
}

}  // namespace sam2rt
