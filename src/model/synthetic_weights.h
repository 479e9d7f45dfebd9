#pragma once

#include <cstdint>
#include <string>

#include "core/tensor.h"
#include "core/weights.h"
#include "model/config.h"

namespace sam2rt {

// The deterministic fixture-weight generator of shared/spec/fixture-weights.md:
// every value is a pure function of (key, flat index, salt), so the official
// PyTorch code and this engine build bit-identical models without a file.
uint64_t fnv1a64(const std::string& bytes);
uint64_t splitmix64(uint64_t x);
Tensor generate_weight(const std::string& key, const Shape& shape, uint64_t salt);

// All image-path weights of `config` (see image_path_weights) from the generator.
WeightMap synthetic_weights(const ModelConfig& config, uint64_t salt);

// Parses a salt given on the command line: decimal or 0x-prefixed hex, 64-bit.
uint64_t parse_salt(const std::string& text);

}  // namespace sam2rt
