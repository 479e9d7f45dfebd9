#include "backends/make_backend.h"

#include "backends/cpu_backend.h"
#include "backends/vulkan/make_vulkan_backend.h"
#include "core/error.h"

namespace sam2rt {

std::shared_ptr<Backend> make_backend(const std::string& device, int gpu_index) {
  if (device == "cpu") return std::make_shared<CpuBackend>();
  if (device == "vulkan") return make_vulkan_backend(gpu_index);
  throw Error("unknown device '" + device + "': use cpu or vulkan");
}

}  // namespace sam2rt
