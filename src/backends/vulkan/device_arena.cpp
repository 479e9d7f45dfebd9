#include "backends/vulkan/device_arena.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <vector>

namespace sam2rt {

struct DeviceArena::State {
  struct Chunk {
    DeviceBuffer buffer;
    std::map<uint64_t, uint64_t> free;  // byte offset -> bytes
  };

  const VulkanContext& context;
  uint64_t chunk_bytes = 0;
  uint64_t element_bytes = 0;
  uint64_t alignment = 0;
  std::mutex mutex;
  std::vector<std::unique_ptr<Chunk>> chunks;

  State(const VulkanContext& context, uint64_t chunk_bytes, uint64_t element_bytes)
      : context(context),
        chunk_bytes(chunk_bytes),
        element_bytes(element_bytes),
        alignment(std::max<uint64_t>(context.limits().min_storage_buffer_offset_alignment, sizeof(float))) {}

  // First fit in the chunks' free ranges; a new chunk when none fits.
  std::pair<Chunk*, uint64_t> take(uint64_t bytes) {
    for (auto& chunk : chunks) {
      for (auto it = chunk->free.begin(); it != chunk->free.end(); ++it) {
        if (it->second < bytes) continue;
        const uint64_t offset = it->first, left = it->second - bytes;
        chunk->free.erase(it);
        if (left > 0) chunk->free.emplace(offset + bytes, left);
        return {chunk.get(), offset};
      }
    }
    auto chunk = std::make_unique<Chunk>();
    const uint64_t size = std::max(chunk_bytes, bytes);
    chunk->buffer = DeviceBuffer(context, size);
    if (size > bytes) chunk->free.emplace(bytes, size - bytes);
    chunks.push_back(std::move(chunk));
    return {chunks.back().get(), 0};
  }

  void give_back(Chunk* chunk, uint64_t offset, uint64_t bytes) {
    std::lock_guard lock(mutex);
    auto next = chunk->free.lower_bound(offset);
    if (next != chunk->free.end() && offset + bytes == next->first) {
      bytes += next->second;
      next = chunk->free.erase(next);
    }
    if (next != chunk->free.begin()) {
      auto previous = std::prev(next);
      if (previous->first + previous->second == offset) {
        previous->second += bytes;
        return;
      }
    }
    chunk->free.emplace(offset, bytes);
  }
};

DeviceArena::DeviceArena(const VulkanContext& context, uint64_t chunk_bytes, uint64_t element_bytes)
    : state_(std::make_shared<State>(context, chunk_bytes, element_bytes)) {}

std::shared_ptr<ArenaRange> DeviceArena::allocate(uint64_t count) {
  const uint64_t bytes = (std::max<uint64_t>(count, 1) * state_->element_bytes + state_->alignment - 1) /
                         state_->alignment * state_->alignment;
  std::lock_guard lock(state_->mutex);
  const auto [chunk, offset] = state_->take(bytes);
  auto* range = new ArenaRange{&chunk->buffer, offset / state_->element_bytes, count};
  return std::shared_ptr<ArenaRange>(range, [state = state_, chunk, offset, bytes](ArenaRange* released) {
    state->give_back(chunk, offset, bytes);
    delete released;
  });
}

uint64_t DeviceArena::bytes_reserved() const {
  std::lock_guard lock(state_->mutex);
  uint64_t total = 0;
  for (const auto& chunk : state_->chunks) total += chunk->buffer.bytes();
  return total;
}

}  // namespace sam2rt
