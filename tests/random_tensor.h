#pragma once

#include <cstdint>
#include <random>

#include "core/tensor.h"

namespace sam2rt::testing {

// Deterministic uniform values in [-scale, scale) for kernel tests and benchmarks.
inline Tensor random_tensor(Shape shape, uint32_t seed, float scale = 1.0f) {
  Tensor t(std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  for (float& v : t) v = dist(rng);
  return t;
}

}  // namespace sam2rt::testing
