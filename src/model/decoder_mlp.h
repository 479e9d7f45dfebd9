#pragma once

#include <string>
#include <vector>

#include "core/tensor.h"
#include "core/weights.h"

namespace sam2rt {

// nn.Linear loaded from `<prefix>.weight` / `<prefix>.bias`.
struct DecoderLinear {
  Tensor weight, bias;
  // weight packed for kernels/small_rows_linear, made by load(); empty (a Linear
  // built from its two tensors alone) means GEMMs throughout.
  Tensor weight_packed;
  static DecoderLinear load(const WeightMap& weights, const std::string& prefix);
  Tensor operator()(const Tensor& x) const;
  // y[rows, out] = x[rows, in] W^T + b on raw rows (same arithmetic as operator()).
  void apply(const float* x, int64_t rows, float* y) const;
  // The same in fixed blocks of output columns shared by `threads` workers (for
  // few rows, where reading the weight is the cost); the rounding does not depend
  // on the thread count.
  void apply_by_columns(const float* x, int64_t rows, float* y, int threads) const;
  int64_t in_features() const { return weight.dim(1); }
  int64_t out_features() const { return weight.dim(0); }
};

// sam2_utils.MLP as the prompt/mask decoder use it: `<prefix>.layers.<i>`,
// ReLU between layers, optional sigmoid on the output.
struct DecoderMlp {
  std::vector<DecoderLinear> layers;
  bool sigmoid_output = false;
  static DecoderMlp load(const WeightMap& weights, const std::string& prefix, int num_layers,
                         bool sigmoid_output = false);
  // x [rows, in]; every layer runs by column blocks over `threads` workers.
  Tensor operator()(const Tensor& x, int threads = 1) const;
};

}  // namespace sam2rt
