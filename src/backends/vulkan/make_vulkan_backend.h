#pragma once

#include <memory>

#include "backends/backend.h"

namespace sam2rt {

// The Vulkan backend on device `gpu_index` (vkEnumeratePhysicalDevices' order).
// Throws Error with one line ending in "use --device cpu" when there is no
// usable device or the build has no Vulkan.
std::shared_ptr<Backend> make_vulkan_backend(int gpu_index);

}  // namespace sam2rt
