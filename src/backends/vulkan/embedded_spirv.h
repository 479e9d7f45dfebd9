#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace sam2rt {

// The SPIR-V of shaders/<name>.comp, compiled by glslc at build time and
// embedded in the binary (the generated embedded_spirv.cpp). Error for a name
// that was not built.
std::span<const uint32_t> embedded_spirv(std::string_view name);

}  // namespace sam2rt
