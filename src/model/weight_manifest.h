#pragma once

#include <string>
#include <vector>

#include "core/tensor.h"
#include "core/weights.h"
#include "model/config.h"

namespace sam2rt {

struct WeightSpec {
  std::string key;  // official state-dict key
  Shape shape;      // official shape
};

// Every state-dict entry the image path (trunk, neck, no_mem_embed, prompt
// encoder, mask decoder) reads, with its exact shape for this config. The video
// memory modules are not listed: the image path never touches them.
std::vector<WeightSpec> image_path_weights(const ModelConfig& config);

// Throws Error naming the key (and both shapes) for the first entry that is
// missing, has the wrong shape or holds a NaN/Inf value. Extra keys are ignored.
void validate_weights(const WeightMap& weights, const ModelConfig& config);

}  // namespace sam2rt
