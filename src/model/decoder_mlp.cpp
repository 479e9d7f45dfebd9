#include "model/decoder_mlp.h"

#include <algorithm>

#include "kernels/activation.h"
#include "kernels/decoder/threads.h"
#include "kernels/gemm.h"
#include "kernels/linear.h"
#include "kernels/decoder/small_rows_linear.h"

namespace sam2rt {

DecoderLinear DecoderLinear::load(const WeightMap& weights, const std::string& prefix) {
  DecoderLinear linear{weights.at(prefix + ".weight"), weights.at(prefix + ".bias"), {}};
  if (linear.weight.rank() == 2) linear.weight_packed = pack_small_rows_weight(linear.weight);
  return linear;
}

Tensor DecoderLinear::operator()(const Tensor& x) const {
  if (x.rank() == 2 && !weight_packed.empty() && small_rows_linear_applies(x.dim(0)) && x.dim(1) == in_features()) {
    Tensor y = Tensor::uninitialized({x.dim(0), out_features()});
    apply(x.data(), x.dim(0), y.data());
    return y;
  }
  return linear(x, weight, bias);
}

void DecoderLinear::apply(const float* x, int64_t rows, float* y) const {
  const int64_t in = in_features(), out = out_features();
  if (!weight_packed.empty() && small_rows_linear_applies(rows)) {
    small_rows_linear({.rows = rows, .in = in, .columns = out, .x = x, .ldx = in, .packed = weight_packed.data(),
                       .bias = bias.data(), .y = y, .ldy = out});
    return;
  }
  // Bias first, then accumulate the product, as kernels/linear does.
  for (int64_t r = 0; r < rows; ++r) std::copy_n(bias.data(), out, y + r * out);
  gemm({.m = rows, .n = out, .k = in, .a = x, .lda = in, .b = weight.data(), .ldb = in, .b_transposed = true,
        .c = y, .ldc = out, .accumulate = true});
}

void DecoderLinear::apply_by_columns(const float* x, int64_t rows, float* y, int threads) const {
  // Fixed column blocks, whatever the thread count: the GEMM shapes, and so the
  // rounding, are the same for a prompt decoded alone or within a batch.
  constexpr int64_t kColumnBlock = 256;
  const int64_t in = in_features(), out = out_features();
  const int64_t block = kColumnBlock;
  const bool small = !weight_packed.empty() && small_rows_linear_applies(rows);
  for_row_blocks(threads, out, block, [&](int64_t j0, int64_t j1) {
    if (small) {
      small_rows_linear({.rows = rows, .in = in, .columns = j1 - j0, .x = x, .ldx = in,
                         .packed = weight_packed.data() + j0 * in, .bias = bias.data() + j0, .y = y + j0,
                         .ldy = out});
      return;
    }
    for (int64_t r = 0; r < rows; ++r) std::copy(bias.data() + j0, bias.data() + j1, y + r * out + j0);
    gemm({.m = rows, .n = j1 - j0, .k = in, .a = x, .lda = in, .b = weight.data() + j0 * in, .ldb = in,
          .b_transposed = true, .c = y + j0, .ldc = out, .accumulate = true});
  });
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

Tensor DecoderMlp::operator()(const Tensor& x, int threads) const {
  Tensor h = x;
  for (size_t i = 0; i < layers.size(); ++i) {
    if (h.rank() == 2 && h.dim(1) == layers[i].in_features()) {
      Tensor y = Tensor::uninitialized({h.dim(0), layers[i].out_features()});
      layers[i].apply_by_columns(h.data(), h.dim(0), y.data(), threads);
      h = y;
    } else {
      h = layers[i](h);
    }
    if (i + 1 < layers.size()) relu_inplace(h);
  }
  if (sigmoid_output) sigmoid_inplace(h);
  return h;
}

}  // namespace sam2rt
