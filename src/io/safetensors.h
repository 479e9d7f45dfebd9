#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "io/atomic_file.h"
#include "io/mapped_file.h"

namespace sam2rt {

// A parsed .safetensors file. F32 tensors are views into the memory-mapped
// file; F16/BF16 are widened to float32 copies. Other dtypes are refused.
struct SafetensorsFile {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> metadata;
};

// Throws Error on any malformed header: length beyond the file, bad JSON,
// offsets out of range or overlapping, sizes that do not match the shape.
SafetensorsFile read_safetensors(const std::string& path);
SafetensorsFile read_safetensors(std::shared_ptr<MappedFile> file);

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// Writes float32 tensors (in the given order) atomically.
void write_safetensors(const std::string& path, const NamedTensors& tensors,
                       const std::map<std::string, std::string>& metadata);
// The same into an output the caller commits (e.g. with other outputs of one run).
void write_safetensors(AtomicFile& out, const NamedTensors& tensors,
                       const std::map<std::string, std::string>& metadata);

}  // namespace sam2rt
