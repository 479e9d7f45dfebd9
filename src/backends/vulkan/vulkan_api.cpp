#include "backends/vulkan/vulkan_api.h"

#include <mutex>

#include "core/error.h"

namespace sam2rt {

void load_vulkan_loader() {
  static std::once_flag once;
  static VkResult result = VK_ERROR_INITIALIZATION_FAILED;
  std::call_once(once, [] { result = volkInitialize(); });
  if (result != VK_SUCCESS) {
    throw Error("no Vulkan device: the Vulkan loader (libvulkan.so.1) is not installed; use --device cpu");
  }
}

void check_vk(VkResult result, const std::string& what) {
  if (result != VK_SUCCESS) throw Error(what + ": " + vk_result_name(result));
}

void memory_barrier(VkCommandBuffer commands, VkPipelineStageFlags source_stage, VkAccessFlags source_access,
                    VkPipelineStageFlags destination_stage, VkAccessFlags destination_access) {
  auto barrier = vk_struct<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
  barrier.srcAccessMask = source_access;
  barrier.dstAccessMask = destination_access;
  vkCmdPipelineBarrier(commands, source_stage, destination_stage, 0, 1, &barrier, 0, nullptr, 0, nullptr);
}

const char* vk_result_name(VkResult result) {
  switch (result) {
    case VK_SUCCESS: return "VK_SUCCESS";
    case VK_NOT_READY: return "VK_NOT_READY";
    case VK_TIMEOUT: return "VK_TIMEOUT";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY (not enough GPU memory)";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_OUT_OF_POOL_MEMORY: return "VK_ERROR_OUT_OF_POOL_MEMORY";
    default: return "VkResult error";
  }
}

}  // namespace sam2rt
