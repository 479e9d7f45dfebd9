#pragma once

#include <map>
#include <string>

#include "io/safetensors.h"

namespace sam2rt {

// How write_safetensors_as stores the float32 tensors: F16 and BF16 round to
// nearest even (F16 turns values beyond its range, 65504, into Inf).
// read_safetensors widens both back to float32.
enum class StoredDtype { f32, f16, bf16 };

// write_safetensors (atomic, tensors in the given order) storing every tensor as `dtype`.
void write_safetensors_as(const std::string& path, const NamedTensors& tensors,
                          const std::map<std::string, std::string>& metadata, StoredDtype dtype);

}  // namespace sam2rt
