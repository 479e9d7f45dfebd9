#pragma once

#include <cstdint>
#include <string>

#include "core/tensor.h"

namespace sam2rt::cli {

// A mask prompt file: either a --logits file of an earlier run (its best
// low_res_masks entry, as the SAM notebooks feed it back) or a single [1, L, L]
// tensor, L = the model's low-res mask size. `origin` starts every error, e.g.
// "--mask-input 'm.safetensors'".
Tensor read_mask_input(const std::string& path, int64_t low_res, const std::string& origin);

}  // namespace sam2rt::cli
