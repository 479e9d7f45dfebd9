#include "kernels/decoder/thread_scratch.h"

#include <array>
#include <memory>
#include <string>

#include "core/error.h"

namespace sam2rt {

float* thread_scratch(int slot, int64_t count) {
  struct Buffer {
    std::unique_ptr<float[]> data;
    int64_t capacity = 0;
  };
  thread_local std::array<Buffer, kThreadScratchSlots> buffers;
  if (slot < 0 || slot >= kThreadScratchSlots) throw Error("thread scratch slot " + std::to_string(slot) + " does not exist");
  Buffer& buffer = buffers[static_cast<size_t>(slot)];
  if (buffer.capacity < count) {
    buffer.data.reset(new float[static_cast<size_t>(count)]);
    buffer.capacity = count;
  }
  return buffer.data.get();
}

}  // namespace sam2rt
