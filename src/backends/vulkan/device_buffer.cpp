#include "backends/vulkan/device_buffer.h"

#include <cstring>
#include <utility>

#include "core/error.h"

namespace sam2rt {

namespace {

constexpr VkBufferUsageFlags kStorageUsage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                             VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;

struct RawBuffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  uint32_t memory_type = 0;
};

RawBuffer create_buffer(const VulkanContext& context, uint64_t bytes, VkMemoryPropertyFlags required,
                        VkMemoryPropertyFlags preferred) {
  RawBuffer raw;
  auto info = vk_struct<VkBufferCreateInfo>(VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO);
  info.size = bytes;
  info.usage = kStorageUsage;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  check_vk(vkCreateBuffer(context.device(), &info, nullptr, &raw.buffer), "vkCreateBuffer");
  VkMemoryRequirements requirements;
  vkGetBufferMemoryRequirements(context.device(), raw.buffer, &requirements);
  try {
    raw.memory_type = context.memory_type(requirements.memoryTypeBits, required, preferred);
    auto allocate = vk_struct<VkMemoryAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO);
    allocate.allocationSize = requirements.size;
    allocate.memoryTypeIndex = raw.memory_type;
    check_vk(vkAllocateMemory(context.device(), &allocate, nullptr, &raw.memory),
             "Vulkan: allocating " + std::to_string(bytes) + " bytes of device memory");
    check_vk(vkBindBufferMemory(context.device(), raw.buffer, raw.memory, 0), "vkBindBufferMemory");
  } catch (...) {
    if (raw.memory != VK_NULL_HANDLE) vkFreeMemory(context.device(), raw.memory, nullptr);
    vkDestroyBuffer(context.device(), raw.buffer, nullptr);
    throw;
  }
  return raw;
}

// A host-visible buffer for one staged copy, freed at scope exit.
class StagingBuffer {
 public:
  StagingBuffer(const VulkanContext& context, uint64_t bytes) : context_(context) {
    const VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    raw_ = create_buffer(context, bytes, host, VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
    check_vk(vkMapMemory(context.device(), raw_.memory, 0, VK_WHOLE_SIZE, 0, &mapped_), "vkMapMemory");
  }
  ~StagingBuffer() {
    vkDestroyBuffer(context_.device(), raw_.buffer, nullptr);
    vkFreeMemory(context_.device(), raw_.memory, nullptr);
  }
  StagingBuffer(const StagingBuffer&) = delete;
  StagingBuffer& operator=(const StagingBuffer&) = delete;

  VkBuffer handle() const { return raw_.buffer; }
  void* mapped() const { return mapped_; }

 private:
  const VulkanContext& context_;
  RawBuffer raw_;
  void* mapped_ = nullptr;
};

}  // namespace

DeviceBuffer::DeviceBuffer(const VulkanContext& context, uint64_t bytes) : context_(&context), bytes_(bytes) {
  if (bytes == 0) throw Error("Vulkan: a device buffer of 0 bytes");
  const RawBuffer raw = create_buffer(context, bytes, 0, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  buffer_ = raw.buffer;
  memory_ = raw.memory;
  if (!context.force_staging() && context.memory_type_is_host_visible(raw.memory_type)) {
    const VkResult result = vkMapMemory(context.device(), memory_, 0, VK_WHOLE_SIZE, 0, &mapped_);
    if (result != VK_SUCCESS) {
      release();
      check_vk(result, "vkMapMemory");
    }
  }
}

DeviceBuffer::~DeviceBuffer() { release(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : context_(other.context_),
      buffer_(std::exchange(other.buffer_, VK_NULL_HANDLE)),
      memory_(std::exchange(other.memory_, VK_NULL_HANDLE)),
      mapped_(std::exchange(other.mapped_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    release();
    context_ = other.context_;
    buffer_ = std::exchange(other.buffer_, VK_NULL_HANDLE);
    memory_ = std::exchange(other.memory_, VK_NULL_HANDLE);
    mapped_ = std::exchange(other.mapped_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void DeviceBuffer::release() {
  if (context_ == nullptr) return;
  if (buffer_ != VK_NULL_HANDLE) vkDestroyBuffer(context_->device(), buffer_, nullptr);
  if (memory_ != VK_NULL_HANDLE) vkFreeMemory(context_->device(), memory_, nullptr);  // unmaps too
  buffer_ = VK_NULL_HANDLE;
  memory_ = VK_NULL_HANDLE;
  mapped_ = nullptr;
}

void DeviceBuffer::check_range(uint64_t size, uint64_t offset, const char* what) const {
  if (offset > bytes_ || size > bytes_ - offset) {
    throw Error(std::string("Vulkan: ") + what + " of " + std::to_string(size) + " bytes at offset " +
                std::to_string(offset) + " outside a buffer of " + std::to_string(bytes_) + " bytes");
  }
}

void DeviceBuffer::upload(const void* data, uint64_t size, uint64_t offset) {
  check_range(size, offset, "upload");
  if (size == 0) return;
  if (mapped_) {
    std::memcpy(static_cast<char*>(mapped_) + offset, data, size);
    return;
  }
  StagingBuffer staging(*context_, size);
  std::memcpy(staging.mapped(), data, size);
  context_->run_once([&](VkCommandBuffer commands) {
    // Earlier kernels may still read or write the destination.
    memory_barrier(commands, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT,
                   VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT);
    const VkBufferCopy region{0, offset, size};
    vkCmdCopyBuffer(commands, staging.handle(), buffer_, 1, &region);
    memory_barrier(commands, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                   VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
  });
}

void DeviceBuffer::download(void* data, uint64_t size, uint64_t offset) const {
  check_range(size, offset, "download");
  if (size == 0) return;
  if (mapped_) {
    std::memcpy(data, static_cast<const char*>(mapped_) + offset, size);
    return;
  }
  StagingBuffer staging(*context_, size);
  context_->run_once([&](VkCommandBuffer commands) {
    memory_barrier(commands, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                   VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
    const VkBufferCopy region{offset, 0, size};
    vkCmdCopyBuffer(commands, buffer_, staging.handle(), 1, &region);
    memory_barrier(commands, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                   VK_ACCESS_HOST_READ_BIT);
  });
  std::memcpy(data, staging.mapped(), size);
}

}  // namespace sam2rt
