#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "backends/vulkan/validation_log.h"
#include "backends/vulkan/vulkan_api.h"

namespace sam2rt {

struct VulkanContextOptions {
  int device_index = 0;  // into vkEnumeratePhysicalDevices' order
  // Khronos validation layer (with synchronization validation) and a messenger
  // writing into validation_log. Error if the layer is not installed.
  bool validation = false;
  std::shared_ptr<ValidationLog> validation_log;
  // Tests: copy through staging buffers even where device memory is mappable,
  // and cap a binding's range below the device limit to exercise chunking.
  bool force_staging = false;
  uint64_t max_binding_bytes = 0;  // 0: the device's maxStorageBufferRange
  // Tests: report the device as unable to store 16-bit values (the fp16 refusal).
  bool hide_16bit_storage = false;
  // Tests: the tiled shared-memory kernels GPUs get, on a CPU device too.
  bool force_tiled_kernels = false;
};

// What the kernels need to know about the device.
struct VulkanLimits {
  uint64_t max_storage_buffer_range = 0;    // bytes one storage-buffer binding may span
  uint64_t min_storage_buffer_offset_alignment = 0;
  uint32_t max_push_constants_size = 0;
  uint32_t max_compute_shared_memory = 0;   // bytes per workgroup
  uint32_t max_workgroup_invocations = 0;
  uint32_t max_workgroup_count[3] = {0, 0, 0};
  uint32_t subgroup_size = 0;
  bool shader_float16 = false;
  bool storage_buffer_16bit = false;
  bool cpu_device = false;  // VK_PHYSICAL_DEVICE_TYPE_CPU (lavapipe)
};

// One Vulkan device with one compute queue: instance, physical device chosen by
// index, logical device, and the limits the kernels respect. Needs Vulkan 1.2.
// Not copyable; everything made from it must be destroyed before it.
class VulkanContext {
 public:
  explicit VulkanContext(const VulkanContextOptions& options = {});
  ~VulkanContext();
  VulkanContext(const VulkanContext&) = delete;
  VulkanContext& operator=(const VulkanContext&) = delete;

  VkDevice device() const { return device_; }
  VkPhysicalDevice physical_device() const { return physical_device_; }
  VkQueue queue() const { return queue_; }
  uint32_t queue_family() const { return queue_family_; }
  const std::string& device_name() const { return device_name_; }
  const VulkanLimits& limits() const { return limits_; }
  // The largest range one binding may span: the device limit or the test cap.
  uint64_t max_binding_bytes() const { return max_binding_bytes_; }
  bool force_staging() const { return force_staging_; }
  // Whether kernels that tile through shared memory with barriers should be used:
  // on GPUs; not on CPU devices, where the barrier-free kernels run best (or
  // when a test forces them).
  bool tiled_kernels() const { return tiled_kernels_; }

  // A memory type with all `required` flags among those `type_bits` allows,
  // preferring one that also has `preferred`. Error if none.
  uint32_t memory_type(uint32_t type_bits, VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred) const;
  bool memory_type_is_host_visible(uint32_t type) const;

  // One command buffer, submitted and waited for (uploads, downloads).
  template <class Record>
  void run_once(Record record) const;

 private:
  VkCommandBuffer begin_once() const;
  void submit_once(VkCommandBuffer commands) const;
  void destroy();

  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  VkPhysicalDevice physical_device_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  VkCommandPool one_time_pool_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  std::string device_name_;
  VulkanLimits limits_;
  VkPhysicalDeviceMemoryProperties memory_{};
  uint64_t max_binding_bytes_ = 0;
  bool force_staging_ = false;
  bool tiled_kernels_ = false;
  std::shared_ptr<ValidationLog> validation_log_;
};

template <class Record>
void VulkanContext::run_once(Record record) const {
  VkCommandBuffer commands = begin_once();
  record(commands);
  submit_once(commands);
}

}  // namespace sam2rt
