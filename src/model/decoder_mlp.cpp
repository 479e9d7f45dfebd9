#include "model/decoder_mlp.h"

#include "kernels/activation.h"
#include "kernels/linear.h"

namespace sam2rt {

DecoderLinear DecoderLinear::load(const WeightMap& weights, const std::string& prefix) {
  return {weights.at(prefix + ".weight"), weights.at(prefix + ".bias")};
}

Tensor DecoderLinear::operator()(const Tensor& x) const { return linear(x, weight, bias); }

DecoderMlp DecoderMlp::load(const WeightMap& weights, const std::string& prefix, int num_layers,
                            bool sigmoid_output) {
  DecoderMlp mlp;
  for (int i = 0; i < num_layers; ++i) {
    mlp.layers.push_back(DecoderLinear::load(weights, prefix + ".layers." + std::to_string(i)));
  }
  mlp.sigmoid_output = sigmoid_output;
  return mlp;
}

Tensor DecoderMlp::operator()(const Tensor& x) const {
  Tensor h = x;
  for (size_t i = 0; i < layers.size(); ++i) {
    h = layers[i](h);
    if (i + 1 < layers.size()) relu_inplace(h);
  }
  if (sigmoid_output) sigmoid_inplace(h);
  return h;
}

}  // namespace sam2rt
