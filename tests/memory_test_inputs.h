#pragma once

// Inputs of the memory tests: the micro fixture's config, weights and random
// frames, the way the official video predictor feeds the memory modules.

#include <cmath>
#include <cstdint>

#include "core/tensor.h"
#include "model/config.h"
#include "random_tensor.h"
#include "test_paths.h"

namespace sam2rt::testing {

inline ModelConfig micro_config() { return load_config_yaml(fixtures_dir() + "/micro/sam2.1_micro.yaml"); }

// mask_for_mem of random high-res logits: sigmoid, * 20, - 10 (_encode_new_memory).
inline Tensor memory_mask_input(int64_t size, uint32_t seed) {
  Tensor mask = random_tensor({1, size, size}, seed, 12.0f);
  for (float& v : mask) v = 1.0f / (1.0f + std::exp(-v)) * 20.0f - 10.0f;
  return mask;
}

}  // namespace sam2rt::testing
