#include "model/hiera.h"

#include <cmath>

#include "core/error.h"
#include "kernels/interpolate.h"
#include "kernels/layout.h"
#include "kernels/stage_profile.h"

namespace sam2rt {

namespace {

constexpr float kHieraNormEps = 1e-6f;

WeightAndBias resident_layer(Backend& backend, const WeightMap& weights, const std::string& prefix) {
  return {backend.constant(weights.at(prefix + ".weight")), backend.constant(weights.at(prefix + ".bias"))};
}

LinearHandle linear_layer(Backend& backend, const WeightMap& weights, const std::string& prefix,
                          Precision precision) {
  return backend.linear(weights.at(prefix + ".weight"), weights.at(prefix + ".bias"), precision);
}

ElementType gemm_input_type(Precision precision) {
  return precision == Precision::bf16 ? ElementType::bf16 : ElementType::f32;
}

// LayerNorm of x [.., C] with eps 1e-6, written in the GEMMs' input type.
DeviceTensor normalized(Backend& backend, const DeviceTensor& x, const WeightAndBias& norm, Precision precision) {
  ScopedStage stage("layer_norm");
  DeviceTensor out = backend.tensor(x.shape(), gemm_input_type(precision));
  backend.layer_norm_rows(x, norm.weight, norm.bias, kHieraNormEps, out);
  return out;
}

// x as a GEMM input: itself, or its rows rounded to bfloat16.
DeviceTensor as_gemm_input(Backend& backend, const DeviceTensor& x, Precision precision) {
  if (precision == Precision::fp32) return x;
  ScopedStage stage("to_bf16");
  DeviceTensor out = backend.tensor(x.shape(), ElementType::bf16);
  backend.convert(x, out);
  return out;
}

// Scaled dot-product attention over the whole grid. `qkv` [1, h, w, 3*C] holds
// per token (q | k | v), each `heads` x C/heads; `pooled_q` [1, h', w', C], when
// given, replaces the q of qkv. Writes `out` [h', w', C].
// In bf16 precision both attention products run in bfloat16.
void attend_globally(Backend& backend, const DeviceTensor& qkv, const DeviceTensor& pooled_q, int heads,
                     Precision precision, DeviceTensor& out) {
  ScopedStage stage("attention (global)");
  const int64_t keys = qkv.dim(1) * qkv.dim(2), width = qkv.dim(3) / 3;
  const bool pooled = !pooled_q.empty();
  AttentionOperands args;
  args.nq = out.dim(0) * out.dim(1);
  args.nk = keys;
  args.heads = heads;
  args.head_dim = width / heads;
  args.q = pooled ? pooled_q : qkv;
  args.ldq = pooled ? width : 3 * width;
  args.k = qkv;
  args.k_offset = width;
  args.ldk = 3 * width;
  args.v = qkv;
  args.v_offset = 2 * width;
  args.ldv = 3 * width;
  args.out = out;
  args.ldo = width;
  args.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(args.head_dim)));
  args.bf16_products = precision == Precision::bf16;
  backend.attention(args);
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

DeviceTensor HieraTrunk::attention(const DeviceTensor& normed, size_t index) const {
  // MultiScaleAttention on the qkv of the normalised input, windowed or global.
  // The official code zero-pads the normalised map before qkv; a zero token's
  // qkv is the bias, so padding the qkv map with the bias is the same. Padded
  // tokens are not masked (they attend and are attended to), as officially.
  const HieraBlockSpec& spec = specs_[index];
  const HieraBlockLayers& layers = blocks_[index];
  const int64_t height = normed.dim(0), width = normed.dim(1);
  const int64_t out_height = spec.q_pool ? height / 2 : height;
  const int64_t out_width = spec.q_pool ? width / 2 : width;
  DeviceTensor attended = backend_.tensor({out_height, out_width, spec.dim_out});
  if (spec.window > 0) {
    ScopedStage stage("qkv + attention (windows)");
    backend_.qkv_windowed_attention(layers.qkv, normed, height, width, spec.window, layers.qkv_bias, spec.heads,
                                    spec.q_pool, attended, precision_ == Precision::bf16);
    return attended;
  }
  DeviceTensor qkv = backend_.tensor({1, height, width, 3 * static_cast<int64_t>(spec.dim_out)});
  {
    ScopedStage stage("linear qkv");
    backend_.linear_forward(layers.qkv, normed, height * width, qkv, Epilogue::none);
  }
  DeviceTensor pooled_q;
  if (spec.q_pool) {
    ScopedStage stage("q pool");
    pooled_q = backend_.tensor({1, out_height, out_width, spec.dim_out});
    backend_.max_pool2x2(qkv, 0, spec.dim_out, pooled_q);
  }
  attend_globally(backend_, qkv, pooled_q, spec.heads, precision_, attended);
  return attended;
}

DeviceTensor HieraTrunk::block(DeviceTensor x, size_t index) const {
  const HieraBlockSpec& spec = specs_[index];
  const HieraBlockLayers& layers = blocks_[index];
  const int64_t height = x.dim(0), width = x.dim(1), tokens = height * width;
  const DeviceTensor normed = normalized(backend_, x, layers.norm1, precision_);

  // The residual: x itself, or (when the block widens) the projection of the
  // NORMALISED input, pooled like q. The attention output is added onto it.
  DeviceTensor out = x;
  if (spec.dim != spec.dim_out) {
    ScopedStage stage("linear proj");
    DeviceTensor projected = backend_.tensor({1, height, width, spec.dim_out});
    backend_.linear_forward(layers.proj, normed, tokens, projected, Epilogue::none);
    if (spec.q_pool) {
      out = backend_.tensor({1, height / 2, width / 2, spec.dim_out});
      backend_.max_pool2x2(projected, 0, spec.dim_out, out);
    } else {
      out = projected;
    }
    out = out.reshaped({out.dim(1), out.dim(2), spec.dim_out});
  }

  const DeviceTensor attended = attention(normed, index);
  const int64_t out_tokens = out.dim(0) * out.dim(1);
  {
    const DeviceTensor attended_in = as_gemm_input(backend_, attended, precision_);
    ScopedStage stage("linear attn proj");
    backend_.linear_forward(layers.attn_proj, attended_in, out_tokens, out, Epilogue::accumulate);
  }

  const DeviceTensor normed2 = normalized(backend_, out, layers.norm2, layers.mlp_in.precision);
  ScopedStage stage("mlp");
  backend_.mlp_forward(layers.mlp_in, layers.mlp_out, normed2, out_tokens, out);
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

Tensor hiera_position_embedding(const Tensor& pos_embed, const Tensor& pos_embed_window, int64_t height,
                                int64_t width) {
  const HieraPositionEmbedding embedding = checked_position_embedding(pos_embed, pos_embed_window, height, width);
  Tensor out(embedding.shape());
  for (int64_t y = 0; y < height; ++y) embedding.row(y, out.data() + y * width * out.dim(2));
  return out;
}

HieraTrunk::HieraTrunk(const ModelConfig& config, const WeightMap& weights, Precision precision, Backend& backend)
    : precision_(precision),
      backend_(backend),
      specs_(hiera_block_specs(config.trunk)),
      stage_ends_(hiera_stage_ends(config.trunk)),
      patch_embed_(resident_layer(backend, weights, "image_encoder.trunk.patch_embed.proj")),
      position_embedding_(backend.constant_rows(std::make_shared<HieraPositionEmbedding>(
          checked_position_embedding(weights.at("image_encoder.trunk.pos_embed"),
                                     weights.at("image_encoder.trunk.pos_embed_window"), config.image_size / 4,
                                     config.image_size / 4)))) {
  const std::string prefix = "image_encoder.trunk";
  for (size_t i = 0; i < specs_.size(); ++i) {
    const std::string b = prefix + ".blocks." + std::to_string(i);
    HieraBlockLayers block;
    block.norm1 = resident_layer(backend, weights, b + ".norm1");
    block.qkv = linear_layer(backend, weights, b + ".attn.qkv", precision);
    block.qkv_bias = backend.constant(weights.at(b + ".attn.qkv.bias"));
    block.attn_proj = linear_layer(backend, weights, b + ".attn.proj", precision);
    block.norm2 = resident_layer(backend, weights, b + ".norm2");
    block.mlp_in = linear_layer(backend, weights, b + ".mlp.layers.0", precision);
    block.mlp_out = linear_layer(backend, weights, b + ".mlp.layers.1", precision);
    if (specs_[i].dim != specs_[i].dim_out) block.proj = linear_layer(backend, weights, b + ".proj", precision);
    blocks_.push_back(std::move(block));
  }
}

DeviceTensor HieraTrunk::embed(const DeviceTensor& image) const {
  // PatchEmbed: conv 7x7, stride 4, padding 3.
  DeviceTensor x = backend_.conv2d_to_hwc(image, patch_embed_.weight, patch_embed_.bias, 4, 3);
  if (x.shape() != position_embedding_.shape()) {
    throw Error("Hiera: image " + shape_to_string(image.shape()) + " gives patch grid " +
                shape_to_string(x.shape()) + " but the model was built for " +
                shape_to_string(position_embedding_.shape()));
  }
  backend_.add_rows(x, position_embedding_);
  return x;
}

std::vector<DeviceTensor> HieraTrunk::forward_blocks(DeviceTensor embedded) const {
  std::vector<DeviceTensor> stage_outputs;
  DeviceTensor x = std::move(embedded);
  size_t next_stage_end = 0;
  for (size_t i = 0; i < blocks_.size(); ++i) {
    // A block that keeps its width adds onto its input in place; a kept stage
    // output must not change under it.
    const bool input_is_kept = !stage_outputs.empty() && stage_outputs.back().shares_storage_with(x);
    if (input_is_kept && specs_[i].dim == specs_[i].dim_out) {
      DeviceTensor copy = backend_.tensor(x.shape());
      backend_.copy(x, copy);
      x = copy;
    }
    x = block(std::move(x), i);
    if (static_cast<int>(i) == stage_ends_[next_stage_end]) {
      stage_outputs.push_back(x);
      ++next_stage_end;
    }
  }
  return stage_outputs;
}

}  // namespace sam2rt
