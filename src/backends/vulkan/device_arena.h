#pragma once

#include <cstdint>
#include <memory>

#include "backends/vulkan/vulkan_ops.h"

namespace sam2rt {

// Elements [offset, offset + count) of a buffer the arena owns, writable by the host.
struct ArenaRange {
  DeviceBuffer* buffer = nullptr;
  uint64_t offset = 0;  // in elements
  uint64_t count = 0;
  DeviceElements elements() const { return {buffer, offset, count}; }
};

// Ranges of elements (floats, or halves on an fp16 backend) carved out of a few
// large device buffers (chunks), first
// fit, freed neighbours merged, each range returned when its last handle dies:
// an encode's activations take about the peak of what is live at once, and the
// same chunks serve every later image. A request larger than the chunk size
// gets a chunk of its own. Every handle must die before the context.
// Thread-safe.
class DeviceArena {
 public:
  DeviceArena(const VulkanContext& context, uint64_t chunk_bytes, uint64_t element_bytes = sizeof(float));

  // `count` elements, contents undefined.
  std::shared_ptr<ArenaRange> allocate(uint64_t count);
  // Bytes of device memory the chunks hold.
  uint64_t bytes_reserved() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace sam2rt
