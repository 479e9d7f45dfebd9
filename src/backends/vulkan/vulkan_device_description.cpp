#include "backends/vulkan/vulkan_device_description.h"

#include "backends/vulkan/vulkan_context.h"

namespace sam2rt {

namespace {

const char* device_type_name(VkPhysicalDeviceType type) {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated GPU";
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete GPU";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual GPU";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "CPU";
    default: return "other";
  }
}

}  // namespace

std::string vulkan_device_description(int index) {
  VulkanContextOptions options;
  options.device_index = index;
  const VulkanContext context(options);
  VkPhysicalDeviceProperties properties;
  vkGetPhysicalDeviceProperties(context.physical_device(), &properties);
  return context.device_name() + " (Vulkan " + std::to_string(VK_API_VERSION_MAJOR(properties.apiVersion)) + "." +
         std::to_string(VK_API_VERSION_MINOR(properties.apiVersion)) + ", " + device_type_name(properties.deviceType) +
         ")";
}

}  // namespace sam2rt
