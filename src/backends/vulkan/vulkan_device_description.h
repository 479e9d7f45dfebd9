#pragma once

#include <string>

namespace sam2rt {

// "<device name> (Vulkan <version>, <type>)" of Vulkan device `index`, opened
// and closed to check that it can run sam2rt. Throws Error with one line
// "no Vulkan device: <why>; use --device cpu" when there is none: no loader,
// no device, index out of range, Vulkan below 1.2, or a build without Vulkan.
std::string vulkan_device_description(int index);

}  // namespace sam2rt
