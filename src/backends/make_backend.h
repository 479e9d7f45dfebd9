#pragma once

#include <memory>
#include <string>

#include "backends/backend.h"

namespace sam2rt {

// The backend `device` names: "cpu", or "vulkan" on GPU `gpu_index`. Error with
// one line for an unknown name or an unusable device.
std::shared_ptr<Backend> make_backend(const std::string& device, int gpu_index);

}  // namespace sam2rt
