#include "model/hiera.h"

#include <cmath>

#include "core/error.h"
#include "kernels/attention.h"
#include "kernels/bf16.h"
#include "kernels/conv2d.h"
#include "kernels/elementwise.h"
#include "kernels/interpolate.h"
#include "kernels/layout.h"
#include "kernels/norm.h"
#include "kernels/stage_profile.h"
#include "kernels/window.h"
#include "kernels/window_attention.h"

namespace sam2rt {

namespace {

constexpr float kHieraNormEps = 1e-6f;

WeightAndBias read_layer(const WeightMap& weights, const std::string& prefix) {
  return {weights.at(prefix + ".weight"), weights.at(prefix + ".bias")};
}

PackedLinear packed_layer(const WeightMap& weights, const std::string& prefix, Precision precision) {
  return PackedLinear(weights.at(prefix + ".weight"), weights.at(prefix + ".bias"), precision);
}

// A GEMM input: float32 rows, or the same rows rounded to bfloat16.
struct GemmInput {
  Tensor f32;
  std::shared_ptr<void> bf16;

  void apply(const PackedLinear& layer, int64_t rows, float* y, Epilogue epilogue) const {
    if (bf16) {
      layer.forward(static_cast<const uint16_t*>(bf16.get()), rows, y, epilogue);
    } else {
      layer.forward(f32.data(), rows, y, epilogue);
    }
  }
};

// LayerNorm of x [.., C] with eps 1e-6, written in the GEMMs' input type.
GemmInput normalized(const Tensor& x, const WeightAndBias& norm, Precision precision, BufferPool& pool) {
  ScopedStage stage("layer_norm");
  const int64_t c = x.dim(-1), rows = x.numel() / c;
  GemmInput out;
  if (precision == Precision::bf16) {
    out.bf16 = pool.bytes(static_cast<size_t>(x.numel()) * sizeof(uint16_t));
    layer_norm_rows(x.data(), c, rows, c, norm.weight.data(), norm.bias.data(), kHieraNormEps,
                    static_cast<uint16_t*>(out.bf16.get()), c);
  } else {
    out.f32 = pool.tensor(x.shape());
    layer_norm_rows(x.data(), c, rows, c, norm.weight.data(), norm.bias.data(), kHieraNormEps, out.f32.data(), c);
  }
  return out;
}

GemmInput as_gemm_input(const Tensor& x, Precision precision, BufferPool& pool) {
  if (precision == Precision::fp32) return {x, nullptr};
  ScopedStage stage("to_bf16");
  GemmInput out;
  out.bf16 = pool.bytes(static_cast<size_t>(x.numel()) * sizeof(uint16_t));
  convert_to_bf16(x.data(), static_cast<uint16_t*>(out.bf16.get()), x.numel());
  return out;
}

// Scaled dot-product attention over the whole grid. `qkv` [1, h, w, 3*C] holds
// per token (q | k | v), each `heads` x C/heads; `pooled_q` [1, h', w', C], when
// given, replaces the q of qkv. Writes `out` [h', w', C].
// In bf16 precision both attention products run in bfloat16.
void attend_globally(const Tensor& qkv, const Tensor& pooled_q, int heads, Precision precision, Tensor& out) {
  ScopedStage stage("attention (global)");
  const int64_t keys = qkv.dim(1) * qkv.dim(2), width = qkv.dim(3) / 3;
  const bool pooled = !pooled_q.empty();
  AttentionArgs args;
  args.nq = out.dim(0) * out.dim(1);
  args.nk = keys;
  args.heads = heads;
  args.head_dim = width / heads;
  args.q = pooled ? pooled_q.data() : qkv.data();
  args.ldq = pooled ? width : 3 * width;
  args.k = qkv.data() + width;
  args.ldk = 3 * width;
  args.v = qkv.data() + 2 * width;
  args.ldv = 3 * width;
  args.out = out.data();
  args.ldo = width;
  args.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(args.head_dim)));
  args.bf16_products = precision == Precision::bf16;
  sam2rt::attention(args);
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

Tensor HieraTrunk::attention(const Tensor& qkv_grid, size_t index) const {
  // MultiScaleAttention on the qkv of the normalised input, windowed or global.
  // The official code zero-pads the normalised map before qkv; a zero token's
  // qkv is the bias, so padding the qkv map with the bias is the same. Padded
  // tokens are not masked (they attend and are attended to), as officially.
  const HieraBlockSpec& spec = specs_[index];
  const int64_t height = qkv_grid.dim(0), width = qkv_grid.dim(1);
  const int64_t out_height = spec.q_pool ? height / 2 : height;
  const int64_t out_width = spec.q_pool ? width / 2 : width;
  Tensor attended = pool_->tensor({out_height, out_width, spec.dim_out});
  if (spec.window > 0) {
    ScopedStage stage("attention (windows)");
    windowed_attention(qkv_grid, spec.window, blocks_[index].qkv_bias.data(), spec.heads, spec.q_pool, attended,
                       precision_ == Precision::bf16);
    return attended;
  }
  const Tensor windows = qkv_grid.reshaped({1, height, width, qkv_grid.dim(2)});
  Tensor pooled_q;
  if (spec.q_pool) {
    ScopedStage stage("q pool");
    pooled_q = pool_->tensor({1, out_height, out_width, spec.dim_out});
    max_pool2x2_into(windows, 0, spec.dim_out, pooled_q);
  }
  attend_globally(windows, pooled_q, spec.heads, precision_, attended);
  return attended;
}

Tensor HieraTrunk::block(Tensor x, size_t index) const {
  const HieraBlockSpec& spec = specs_[index];
  const HieraBlockLayers& layers = blocks_[index];
  const int64_t height = x.dim(0), width = x.dim(1), tokens = height * width;
  const GemmInput normed = normalized(x, layers.norm1, precision_, *pool_);

  // The residual: x itself, or (when the block widens) the projection of the
  // NORMALISED input, pooled like q. The attention output is added onto it.
  Tensor out = x;
  if (spec.dim != spec.dim_out) {
    ScopedStage stage("linear proj");
    Tensor projected = pool_->tensor({1, height, width, spec.dim_out});
    normed.apply(layers.proj, tokens, projected.data(), Epilogue::none);
    if (spec.q_pool) {
      out = pool_->tensor({1, height / 2, width / 2, spec.dim_out});
      max_pool2x2_into(projected, 0, spec.dim_out, out);
    } else {
      out = projected;
    }
    out = out.reshaped({out.dim(1), out.dim(2), spec.dim_out});
  }

  Tensor qkv = pool_->tensor({height, width, 3 * static_cast<int64_t>(spec.dim_out)});
  {
    ScopedStage stage("linear qkv");
    normed.apply(layers.qkv, tokens, qkv.data(), Epilogue::none);
  }
  const Tensor attended = attention(qkv, index);
  qkv = Tensor();
  const int64_t out_tokens = out.dim(0) * out.dim(1);
  {
    const GemmInput attended_in = as_gemm_input(attended, precision_, *pool_);
    ScopedStage stage("linear attn proj");
    attended_in.apply(layers.attn_proj, out_tokens, out.data(), Epilogue::accumulate);
  }

  const GemmInput normed2 = normalized(out, layers.norm2, layers.mlp_in.precision(), *pool_);
  const int64_t hidden_width = layers.mlp_in.out_features();
  if (layers.mlp_in.precision() == Precision::bf16) {
    std::shared_ptr<void> hidden = pool_->bytes(static_cast<size_t>(out_tokens * hidden_width) * sizeof(uint16_t));
    auto* h = static_cast<uint16_t*>(hidden.get());
    {
      ScopedStage stage("linear mlp in + gelu");
      layers.mlp_in.forward(static_cast<const uint16_t*>(normed2.bf16.get()), out_tokens, h, Epilogue::gelu);
    }
    ScopedStage stage("linear mlp out");
    layers.mlp_out.forward(h, out_tokens, out.data(), Epilogue::accumulate);
  } else {
    Tensor hidden = pool_->tensor({out_tokens, hidden_width});
    {
      ScopedStage stage("linear mlp in + gelu");
      layers.mlp_in.forward(normed2.f32.data(), out_tokens, hidden.data(), Epilogue::gelu);
    }
    ScopedStage stage("linear mlp out");
    layers.mlp_out.forward(hidden.data(), out_tokens, out.data(), Epilogue::accumulate);
  }
  return out;
}

namespace {

HieraPositionEmbedding checked_position_embedding(const Tensor& pos_embed, const Tensor& pos_embed_window,
                                                  int64_t height, int64_t width) {
  const int64_t window = pos_embed_window.dim(2);
  if (height % window != 0 || width % window != 0) {
    throw Error("Hiera position embedding: the " + std::to_string(window) + "x" + std::to_string(window) +
                " window embedding does not tile the " + std::to_string(height) + "x" +
                std::to_string(width) + " patch grid");
  }
  return HieraPositionEmbedding(pos_embed, pos_embed_window, height, width);
}

}  // namespace

HieraPositionEmbedding::HieraPositionEmbedding(const Tensor& pos_embed, const Tensor& pos_embed_window,
                                               int64_t height, int64_t width)
    : background_(pos_embed, height, width), window_(nchw_to_hwc(pos_embed_window)) {
  if (window_.dim(2) != background_.channels()) {
    throw Error("Hiera position embedding: pos_embed_window " + shape_to_string(pos_embed_window.shape()) +
                " does not match pos_embed " + shape_to_string(pos_embed.shape()));
  }
}

void HieraPositionEmbedding::row(int64_t y, float* out) const {
  background_.row(y, out);
  const int64_t width = background_.width(), channels = background_.channels(), window = window_.dim(0);
  const float* tile_row = window_.data() + (y % window) * window * channels;
  for (int64_t x = 0; x < width; ++x) {
    float* dst = out + x * channels;
    const float* src = tile_row + (x % window) * channels;
    for (int64_t c = 0; c < channels; ++c) dst[c] += src[c];
  }
}

void HieraPositionEmbedding::add_to(Tensor& x) const {
  if (x.shape() != shape()) {
    throw Error("Hiera position embedding: map " + shape_to_string(x.shape()) + " is not " + shape_to_string(shape()));
  }
  const int64_t height = x.dim(0), row_size = x.dim(1) * x.dim(2);
#pragma omp parallel
  {
    std::vector<float> embedding(static_cast<size_t>(row_size));
#pragma omp for schedule(static)
    for (int64_t y = 0; y < height; ++y) {
      row(y, embedding.data());
      float* dst = x.data() + y * row_size;
      for (int64_t i = 0; i < row_size; ++i) dst[i] += embedding[static_cast<size_t>(i)];
    }
  }
}

Tensor hiera_position_embedding(const Tensor& pos_embed, const Tensor& pos_embed_window, int64_t height,
                                int64_t width) {
  const HieraPositionEmbedding embedding = checked_position_embedding(pos_embed, pos_embed_window, height, width);
  Tensor out(embedding.shape());
  for (int64_t y = 0; y < height; ++y) embedding.row(y, out.data() + y * width * out.dim(2));
  return out;
}

HieraTrunk::HieraTrunk(const ModelConfig& config, const WeightMap& weights, Precision precision,
                       std::shared_ptr<BufferPool> pool)
    : precision_(precision),
      pool_(std::move(pool)),
      specs_(hiera_block_specs(config.trunk)),
      stage_ends_(hiera_stage_ends(config.trunk)),
      patch_embed_(read_layer(weights, "image_encoder.trunk.patch_embed.proj")),
      position_embedding_(checked_position_embedding(weights.at("image_encoder.trunk.pos_embed"),
                                                     weights.at("image_encoder.trunk.pos_embed_window"),
                                                     config.image_size / 4, config.image_size / 4)) {
  const std::string prefix = "image_encoder.trunk";
  for (size_t i = 0; i < specs_.size(); ++i) {
    const std::string b = prefix + ".blocks." + std::to_string(i);
    HieraBlockLayers block;
    block.norm1 = read_layer(weights, b + ".norm1");
    block.qkv = packed_layer(weights, b + ".attn.qkv", precision);
    block.qkv_bias = weights.at(b + ".attn.qkv.bias");
    block.attn_proj = packed_layer(weights, b + ".attn.proj", precision);
    block.norm2 = read_layer(weights, b + ".norm2");
    block.mlp_in = packed_layer(weights, b + ".mlp.layers.0", precision);
    block.mlp_out = packed_layer(weights, b + ".mlp.layers.1", precision);
    if (specs_[i].dim != specs_[i].dim_out) block.proj = packed_layer(weights, b + ".proj", precision);
    blocks_.push_back(std::move(block));
  }
}

Tensor HieraTrunk::embed(const Tensor& image) const {
  // PatchEmbed: conv 7x7, stride 4, padding 3.
  Tensor x = conv2d_to_hwc(image, patch_embed_.weight, patch_embed_.bias, 4, 3, pool_.get());
  if (x.shape() != position_embedding_.shape()) {
    throw Error("Hiera: image " + shape_to_string(image.shape()) + " gives patch grid " +
                shape_to_string(x.shape()) + " but the model was built for " +
                shape_to_string(position_embedding_.shape()));
  }
  position_embedding_.add_to(x);
  return x;
}

std::vector<Tensor> HieraTrunk::forward_blocks(Tensor embedded) const {
  std::vector<Tensor> stage_outputs;
  Tensor x = std::move(embedded);
  size_t next_stage_end = 0;
  for (size_t i = 0; i < blocks_.size(); ++i) {
    // A block that keeps its width adds onto its input in place; a kept stage
    // output must not change under it.
    const bool input_is_kept = !stage_outputs.empty() && stage_outputs.back().data() == x.data();
    if (input_is_kept && specs_[i].dim == specs_[i].dim_out) x = x.clone();
    x = block(std::move(x), i);
    if (static_cast<int>(i) == stage_ends_[next_stage_end]) {
      stage_outputs.push_back(x);
      ++next_stage_end;
    }
  }
  return stage_outputs;
}

}  // namespace sam2rt
