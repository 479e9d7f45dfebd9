#pragma once

#include <memory>
#include <string>

#include "backends/backend.h"
#include "backends/device_precision.h"

namespace sam2rt {

// A device as the APIs name it in one string: "cpu", "vulkan" (the first Vulkan
// device) or "vulkan:N".
struct DeviceChoice {
  std::string kind = "cpu";  // "cpu" or "vulkan"
  int gpu_index = 0;
};

// Error with one line naming the supported forms for anything else.
DeviceChoice parse_device(const std::string& name);

// The backend `device` names: "cpu", or "vulkan" on GPU `gpu_index`, storing
// tensors and weights in `precision` (fp16: device backends only). Error with one
// line for an unknown name, an unusable device or a precision it cannot store.
std::shared_ptr<Backend> make_backend(const std::string& device, int gpu_index,
                                      DevicePrecision precision = DevicePrecision::fp32);

}  // namespace sam2rt
