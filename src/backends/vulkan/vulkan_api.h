#pragma once

// The Vulkan API through volk: no link-time dependency on libvulkan; the loader
// is opened at run time (load_vulkan_loader), so a binary built with Vulkan
// still runs where none is installed.
#include <volk.h>

#include <string>

namespace sam2rt {

// A Vulkan structure with its sType set and every other member zero.
template <class Struct>
Struct vk_struct(VkStructureType type) {
  Struct value{};
  value.sType = type;
  return value;
}

// Opens the system's Vulkan loader once per process. Throws Error("no Vulkan
// device: ...") when there is none.
void load_vulkan_loader();

// Throws Error("<what>: <VkResult name>") unless result is VK_SUCCESS.
void check_vk(VkResult result, const std::string& what);

const char* vk_result_name(VkResult result);

// A global memory barrier: writes of `source` stage/access made available and
// visible to `destination`.
void memory_barrier(VkCommandBuffer commands, VkPipelineStageFlags source_stage, VkAccessFlags source_access,
                    VkPipelineStageFlags destination_stage, VkAccessFlags destination_access);

}  // namespace sam2rt
