#pragma once

#include <cstddef>
#include <string>

#include "api/model_source.h"

namespace sam2rt::cli {

struct CheckpointVerification {
  size_t zip_records = 0;  // records whose CRC-32 was checked (0 for a .safetensors file)
  size_t tensors = 0;      // weights loaded and validated against the manifest
};

// Checks a downloaded checkpoint the way the model reads it: every record of a
// torch.save zip must match its CRC-32, and the model the `architecture`
// describes (its variant or config; its checkpoint_path is replaced by `path`)
// must load from it: every key of the weight manifest present, with its shape
// and no NaN or Inf. Throws Error saying what is wrong.
CheckpointVerification verify_checkpoint(const std::string& path, ModelSource architecture);

}  // namespace sam2rt::cli
