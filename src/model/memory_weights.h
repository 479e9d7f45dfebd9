#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "core/weights.h"
#include "model/config.h"

namespace sam2rt {

// Every tensor of the video path (memory_attention.*, memory_encoder.*, the
// object-pointer heads, the memory embeddings and mask_downsample) with its
// official shape for `config`: the state-dict keys the image path leaves out.
std::vector<std::pair<std::string, Shape>> memory_module_shapes(const ModelConfig& config);

// Those tensors from the fixture-weight generator (synthetic_weights.h).
WeightMap synthetic_memory_weights(const ModelConfig& config, uint64_t salt);

}  // namespace sam2rt
