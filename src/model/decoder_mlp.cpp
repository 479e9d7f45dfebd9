#include "model/decoder_mlp.h"

#include <algorithm>

#include "kernels/activation.h"
#include "kernels/gemm.h"
#include "kernels/linear.h"

namespace sam2rt {

DecoderLinear DecoderLinear::load(const WeightMap& weights, const std::string& prefix) {
  return {weights.at(prefix + ".weight"), weights.at(prefix + ".bias")};
}

Tensor DecoderLinear::operator()(const Tensor& x) const { return linear(x, weight, bias); }

void DecoderLinear::apply(const float* x, int64_t rows, float* y) const {
  const int64_t in = in_features(), out = out_features();
  // Bias first, then accumulate the product, as kernels/linear does.
  for (int64_t r = 0; r < rows; ++r) std::copy_n(bias.data(), out, y + r * out);
  gemm({.m = rows, .n = out, .k = in, .a = x, .lda = in, .b = weight.data(), .ldb = in, .b_transposed = true,
        .c = y, .ldc = out, .accumulate = true});
}

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
