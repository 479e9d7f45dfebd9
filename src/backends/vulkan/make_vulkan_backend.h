#pragma once

#include <memory>

#include "backends/backend.h"
#include "backends/device_precision.h"

namespace sam2rt {

// The Vulkan backend on device `gpu_index` (vkEnumeratePhysicalDevices' order),
// storing tensors and weights in `precision`. Throws Error with one line ending
// in "use --device cpu" when there is no usable device or the build has no
// Vulkan, and in "use --precision fp32" when the device cannot store fp16.
std::shared_ptr<Backend> make_vulkan_backend(int gpu_index, DevicePrecision precision = DevicePrecision::fp32);

}  // namespace sam2rt
