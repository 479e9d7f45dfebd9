#pragma once

#include <memory>
#include <string>

#include "core/weights.h"
#include "io/mapped_file.h"

namespace sam2rt {

// Reads a torch.save zip checkpoint such as Meta's sam2.1_hiera_*.pt without
// Python: the tensors of the top-level dict's "model" entry (or of a bare state
// dict), widened to float32. Contiguous, aligned float32 tensors are views into
// the memory-mapped file (which they keep alive); others are copied. Only
// stored zip entries and the pickle subset a state dict needs are accepted.
// Throws a one-line Error naming the file and the problem.
WeightMap load_torch_checkpoint(const std::string& path);
WeightMap load_torch_checkpoint(std::shared_ptr<MappedFile> file);

}  // namespace sam2rt
