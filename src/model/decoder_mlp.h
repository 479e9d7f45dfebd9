#pragma once

#include <string>
#include <vector>

#include "core/tensor.h"
#include "core/weights.h"

namespace sam2rt {

// nn.Linear loaded from `<prefix>.weight` / `<prefix>.bias`.
struct DecoderLinear {
  Tensor weight, bias;
  static DecoderLinear load(const WeightMap& weights, const std::string& prefix);
  Tensor operator()(const Tensor& x) const;
};

// sam2_utils.MLP as the prompt/mask decoder use it: `<prefix>.layers.<i>`,
// ReLU between layers, optional sigmoid on the output.
struct DecoderMlp {
  std::vector<DecoderLinear> layers;
  bool sigmoid_output = false;
  static DecoderMlp load(const WeightMap& weights, const std::string& prefix, int num_layers,
                         bool sigmoid_output = false);
  Tensor operator()(const Tensor& x) const;
};

}  // namespace sam2rt
