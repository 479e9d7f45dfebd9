// vulkan_device_description and make_vulkan_backend in a build without the
// Vulkan backend (SAM2RT_VULKAN=OFF: volk, the Vulkan headers or glslc were missing).
#include "backends/vulkan/make_vulkan_backend.h"
#include "backends/vulkan/vulkan_device_description.h"
#include "core/error.h"

namespace sam2rt {

namespace {

[[noreturn]] void no_vulkan() {
  throw Error("no Vulkan device: this sam2rt was built without Vulkan (needs libvulkan-volk-dev, libvulkan-dev "
              "and glslc); use --device cpu");
}

}  // namespace

std::string vulkan_device_description(int) { no_vulkan(); }

std::shared_ptr<Backend> make_vulkan_backend(int, DevicePrecision) { no_vulkan(); }

}  // namespace sam2rt
