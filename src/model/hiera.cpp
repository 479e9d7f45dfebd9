#include "model/hiera.h"

#include <omp.h>

#include <cmath>

#include "core/error.h"
#include "kernels/activation.h"
#include "kernels/attention.h"
#include "kernels/conv2d.h"
#include "kernels/elementwise.h"
#include "kernels/interpolate.h"
#include "kernels/layout.h"
#include "kernels/linear.h"
#include "kernels/norm.h"
#include "kernels/window.h"

namespace sam2rt {

namespace {

constexpr float kHieraNormEps = 1e-6f;

Tensor layer_norm(const Tensor& x, const WeightAndBias& norm) {
  return sam2rt::layer_norm(x, norm.weight, norm.bias, kHieraNormEps);
}

Tensor linear(const Tensor& x, const WeightAndBias& layer) { return sam2rt::linear(x, layer.weight, layer.bias); }

WeightAndBias read_layer(const WeightMap& weights, const std::string& prefix) {
  return {weights.at(prefix + ".weight"), weights.at(prefix + ".bias")};
}

// Scaled dot-product attention inside every window. `qkv` [N, h, w, 3*C] holds
// per token (q | k | v), each `heads` x C/heads; `pooled_q` [N, h', w', C], when
// given, replaces the q of qkv. Returns [N, h', w', C] (h', w' = the query grid).
Tensor attend_within_windows(const Tensor& qkv, const Tensor& pooled_q, int heads) {
  const int64_t windows = qkv.dim(0), keys = qkv.dim(1) * qkv.dim(2), width = qkv.dim(3) / 3;
  const bool pooled = !pooled_q.empty();
  const int64_t qh = pooled ? pooled_q.dim(1) : qkv.dim(1), qw = pooled ? pooled_q.dim(2) : qkv.dim(2);
  const int64_t queries = qh * qw;
  const int64_t head_dim = width / heads;
  Tensor out({windows, qh, qw, width});
  // Few large windows (global attention) parallelise inside attention(); many
  // small ones across windows.
  const bool across_windows = windows >= omp_get_max_threads();
#pragma omp parallel for schedule(dynamic) if (across_windows)
  for (int64_t n = 0; n < windows; ++n) {
    const float* window_qkv = qkv.data() + n * keys * 3 * width;
    AttentionArgs args;
    args.nq = queries;
    args.nk = keys;
    args.heads = heads;
    args.head_dim = head_dim;
    args.q = pooled ? pooled_q.data() + n * queries * width : window_qkv;
    args.ldq = pooled ? width : 3 * width;
    args.k = window_qkv + width;
    args.ldk = 3 * width;
    args.v = window_qkv + 2 * width;
    args.ldv = 3 * width;
    args.out = out.data() + n * queries * width;
    args.ldo = width;
    args.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)));
    attention(args);
  }
  return out;
}

// MultiScaleAttention on the normalised input x [H, W, dim], windowed or global.
// Window partitioning zero-pads the grid; the padded tokens are not masked (they
// attend and are attended to with k = v = the qkv bias), as in the official code.
Tensor multi_scale_attention(const Tensor& x, const HieraBlockSpec& spec, const HieraBlockWeights& w) {
  const int64_t height = x.dim(0), width = x.dim(1);
  const bool windowed = spec.window > 0;
  const Tensor windows = windowed ? window_partition(x, spec.window) : x.reshaped({1, height, width, x.dim(2)});
  const Tensor qkv = linear(windows, w.qkv);
  const Tensor pooled_q = spec.q_pool ? max_pool2x2(qkv, 0, spec.dim_out) : Tensor();
  Tensor attended = attend_within_windows(qkv, pooled_q, spec.heads);

  const int64_t out_height = spec.q_pool ? height / 2 : height;
  const int64_t out_width = spec.q_pool ? width / 2 : width;
  Tensor tokens = windowed ? window_unpartition(attended, attended.dim(1), out_height, out_width)
                           : attended.reshaped({out_height, out_width, spec.dim_out});
  // proj is per token, so applying it after cropping the padding is the same.
  return linear(tokens, w.attn_proj);
}

Tensor mlp(const Tensor& x, const HieraBlockWeights& w) {
  Tensor hidden = linear(x, w.mlp_in);
  gelu_inplace(hidden);
  return linear(hidden, w.mlp_out);
}

}  // namespace

std::vector<int> hiera_stage_ends(const HieraConfig& config) {
  std::vector<int> ends;
  int total = 0;
  for (int blocks : config.stages) ends.push_back((total += blocks) - 1);
  return ends;
}

std::vector<HieraBlockSpec> hiera_block_specs(const HieraConfig& config) {
  const std::vector<int> stage_ends = hiera_stage_ends(config);
  std::vector<int> q_pool_blocks;
  for (size_t s = 0; s + 1 < stage_ends.size() && static_cast<int>(s) < config.q_pool; ++s) {
    q_pool_blocks.push_back(stage_ends[s] + 1);
  }
  auto contains = [](const std::vector<int>& list, int value) {
    for (int v : list)
      if (v == value) return true;
    return false;
  };
  std::vector<HieraBlockSpec> specs;
  int dim = config.embed_dim, heads = config.num_heads;
  size_t stage = 0;
  for (int block = 0; block < stage_ends.back() + 1; ++block) {
    HieraBlockSpec spec;
    spec.dim = dim;
    // Chosen before the stage counter advances: the one-block lag.
    spec.window = contains(config.global_att_blocks, block) ? 0 : config.window_spec[stage];
    if (contains(stage_ends, block - 1)) {
      dim = static_cast<int>(dim * config.dim_mul);
      heads = static_cast<int>(heads * config.head_mul);
      ++stage;
    }
    spec.dim_out = dim;
    spec.heads = heads;
    spec.q_pool = contains(q_pool_blocks, block);
    specs.push_back(spec);
  }
  return specs;
}

Tensor hiera_block(const Tensor& x, const HieraBlockSpec& spec, const HieraBlockWeights& w) {
  const Tensor normed = layer_norm(x, w.norm1);
  Tensor residual = x;
  if (spec.dim != spec.dim_out) {
    // The widening residual projects the NORMALISED input, then pools it.
    residual = linear(normed, w.proj);
    if (spec.q_pool) residual = max_pool2x2(residual.reshaped({1, x.dim(0), x.dim(1), spec.dim_out}));
    residual = residual.reshaped({residual.dim(-3), residual.dim(-2), spec.dim_out});
  }
  Tensor out = multi_scale_attention(normed, spec, w);
  add_inplace(out, residual);
  add_inplace(out, mlp(layer_norm(out, w.norm2), w));
  return out;
}

Tensor hiera_position_embedding(const Tensor& pos_embed, const Tensor& pos_embed_window, int64_t height,
                                int64_t width) {
  const int64_t window = pos_embed_window.dim(2);
  if (height % window != 0 || width % window != 0) {
    throw Error("Hiera position embedding: the " + std::to_string(window) + "x" + std::to_string(window) +
                " window embedding does not tile the " + std::to_string(height) + "x" +
                std::to_string(width) + " patch grid");
  }
  Tensor resized = nchw_to_hwc(resize_bicubic(pos_embed, height, width));
  const Tensor tile = nchw_to_hwc(pos_embed_window);  // [window, window, C]
  const int64_t channels = resized.dim(2);
  for (int64_t y = 0; y < height; ++y) {
    for (int64_t x = 0; x < width; ++x) {
      float* dst = resized.data() + (y * width + x) * channels;
      const float* src = tile.data() + ((y % window) * window + x % window) * channels;
      for (int64_t c = 0; c < channels; ++c) dst[c] += src[c];
    }
  }
  return resized;
}

HieraTrunk::HieraTrunk(const ModelConfig& config, const WeightMap& weights)
    : specs_(hiera_block_specs(config.trunk)), stage_ends_(hiera_stage_ends(config.trunk)) {
  const std::string prefix = "image_encoder.trunk";
  patch_embed_ = read_layer(weights, prefix + ".patch_embed.proj");
  const int64_t grid = config.image_size / 4;
  position_embedding_ =
      hiera_position_embedding(weights.at(prefix + ".pos_embed"), weights.at(prefix + ".pos_embed_window"), grid, grid);
  for (size_t i = 0; i < specs_.size(); ++i) {
    const std::string b = prefix + ".blocks." + std::to_string(i);
    HieraBlockWeights block;
    block.norm1 = read_layer(weights, b + ".norm1");
    block.qkv = read_layer(weights, b + ".attn.qkv");
    block.attn_proj = read_layer(weights, b + ".attn.proj");
    block.norm2 = read_layer(weights, b + ".norm2");
    block.mlp_in = read_layer(weights, b + ".mlp.layers.0");
    block.mlp_out = read_layer(weights, b + ".mlp.layers.1");
    if (specs_[i].dim != specs_[i].dim_out) block.proj = read_layer(weights, b + ".proj");
    blocks_.push_back(std::move(block));
  }
}

Tensor HieraTrunk::embed(const Tensor& image) const {
  // PatchEmbed: conv 7x7, stride 4, padding 3.
  Tensor x = conv2d_to_hwc(image, patch_embed_.weight, patch_embed_.bias, 4, 3);
  if (x.shape() != position_embedding_.shape()) {
    throw Error("Hiera: image " + shape_to_string(image.shape()) + " gives patch grid " +
                shape_to_string(x.shape()) + " but the model was built for " +
                shape_to_string(position_embedding_.shape()));
  }
  add_inplace(x, position_embedding_);
  return x;
}

std::vector<Tensor> HieraTrunk::forward_blocks(const Tensor& embedded) const {
  std::vector<Tensor> stage_outputs;
  Tensor x = embedded;
  size_t next_stage_end = 0;
  for (size_t i = 0; i < blocks_.size(); ++i) {
    x = hiera_block(x, specs_[i], blocks_[i]);
    if (static_cast<int>(i) == stage_ends_[next_stage_end]) {
      stage_outputs.push_back(x);
      ++next_stage_end;
    }
  }
  return stage_outputs;
}

}  // namespace sam2rt
