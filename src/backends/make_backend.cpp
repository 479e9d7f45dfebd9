#include "backends/make_backend.h"

#include <charconv>

#include "backends/cpu_backend.h"
#include "backends/vulkan/make_vulkan_backend.h"
#include "core/error.h"

namespace sam2rt {

namespace {

constexpr int kMaxGpuIndex = 255;  // as --gpu-index

}  // namespace

DeviceChoice parse_device(const std::string& name) {
  if (name == "cpu" || name == "vulkan") return {name, 0};
  const std::string prefix = "vulkan:";
  if (name.starts_with(prefix) && name.size() > prefix.size()) {
    const char* first = name.data() + prefix.size();
    const char* last = name.data() + name.size();
    int index = -1;
    const auto [end, problem] = std::from_chars(first, last, index);
    if (problem == std::errc() && end == last && index >= 0 && index <= kMaxGpuIndex) return {"vulkan", index};
  }
  throw Error("device '" + name.substr(0, 64) + "' is not supported: use \"cpu\", \"vulkan\" or \"vulkan:N\" (N = 0.." +
              std::to_string(kMaxGpuIndex) + ", the Vulkan device's index)");
}

std::shared_ptr<Backend> make_backend(const std::string& device, int gpu_index, DevicePrecision precision) {
  if (device == "cpu") {
    if (precision == DevicePrecision::fp16) {
      throw Error("--precision fp16 runs on --device vulkan only; on the CPU use fp32 (or bf16)");
    }
    return std::make_shared<CpuBackend>();
  }
  if (device == "vulkan") return make_vulkan_backend(gpu_index, precision);
  throw Error("unknown device '" + device + "': use cpu or vulkan");
}

}  // namespace sam2rt
