// vulkan_device_description in a build without the Vulkan backend
// (SAM2RT_VULKAN=OFF: volk, the Vulkan headers or glslc were missing).
#include "backends/vulkan/vulkan_device_description.h"

#include "core/error.h"

namespace sam2rt {

std::string vulkan_device_description(int) {
  throw Error("no Vulkan device: this sam2rt was built without Vulkan (needs libvulkan-volk-dev, libvulkan-dev "
              "and glslc); use --device cpu");
}

}  // namespace sam2rt
