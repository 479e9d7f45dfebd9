#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/vulkan/vulkan_context.h"

namespace sam2rt {

// A storage buffer in device memory (device-local where the device has it).
// Where that memory is also host-visible (integrated GPUs, lavapipe) uploads
// and downloads are plain copies through a persistent mapping; elsewhere they
// go through a temporary staging buffer and a copy command. Movable, not
// copyable; must not outlive its context.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const VulkanContext& context, uint64_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  VkBuffer handle() const { return buffer_; }
  uint64_t bytes() const { return bytes_; }
  bool mapped() const { return mapped_ != nullptr; }

  // bytes [offset, offset + size) of the buffer <- / -> host memory. Error when
  // the range does not lie inside the buffer. Not to be called while a
  // submitted command that uses the buffer is still running.
  void upload(const void* data, uint64_t size, uint64_t offset = 0);
  void download(void* data, uint64_t size, uint64_t offset = 0) const;

 private:
  void check_range(uint64_t size, uint64_t offset, const char* what) const;
  void release();

  const VulkanContext* context_ = nullptr;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  void* mapped_ = nullptr;
  uint64_t bytes_ = 0;
};

// A range of a DeviceBuffer, the unit a kernel binds: byte offset and size.
struct BufferRange {
  const DeviceBuffer* buffer = nullptr;
  uint64_t offset = 0;
  uint64_t bytes = 0;
};

inline BufferRange whole(const DeviceBuffer& buffer) { return {&buffer, 0, buffer.bytes()}; }

}  // namespace sam2rt
