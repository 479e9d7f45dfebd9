#pragma once

#include <string>

#include "core/weights.h"

namespace sam2rt {

// Loads model weights from either accepted format, chosen by content rather
// than by file name: a torch.save zip checkpoint (Meta's sam2.1_hiera_*.pt,
// tensors of its "model" dict) or a .safetensors file (all tensors, keys kept
// as they are). Throws Error for empty or unrecognised files, naming both formats.
WeightMap load_checkpoint(const std::string& path);

}  // namespace sam2rt
