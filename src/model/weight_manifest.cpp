#include "model/weight_manifest.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

#include "core/error.h"

namespace sam2rt {

namespace {

// The flat index of the first NaN or Inf among v[0..n), or n. The all-ones
// exponents are counted without a branch first (a vectorized parallel loop: the
// model's weights are checked at every start), and searched only if any.
int64_t first_non_finite(const float* v, int64_t n) {
  constexpr uint32_t kExponentBits = 0x7f800000u;
  int64_t non_finite = 0;
#pragma omp parallel for reduction(+ : non_finite) schedule(static) if (n > (1 << 16))
  for (int64_t i = 0; i < n; ++i) non_finite += (std::bit_cast<uint32_t>(v[i]) & kExponentBits) == kExponentBits;
  if (non_finite == 0) return n;
  return std::find_if(v, v + n, [](float x) { return !std::isfinite(x); }) - v;
}

class ManifestBuilder {
 public:
  void add(std::string key, Shape shape) { specs_.push_back({std::move(key), std::move(shape)}); }
  void linear(const std::string& prefix, int64_t out, int64_t in) {
    add(prefix + ".weight", {out, in});
    add(prefix + ".bias", {out});
  }
  void norm(const std::string& prefix, int64_t dim) {
    add(prefix + ".weight", {dim});
    add(prefix + ".bias", {dim});
  }
  void conv(const std::string& prefix, int64_t out, int64_t in, int64_t kh, int64_t kw) {
    add(prefix + ".weight", {out, in, kh, kw});
    add(prefix + ".bias", {out});
  }
  void conv_transpose(const std::string& prefix, int64_t in, int64_t out, int64_t k) {
    add(prefix + ".weight", {in, out, k, k});
    add(prefix + ".bias", {out});
  }
  void mlp(const std::string& prefix, int64_t in, int64_t hidden, int64_t out, int layers) {
    for (int i = 0; i < layers; ++i) {
      int64_t layer_in = i == 0 ? in : hidden;
      int64_t layer_out = i == layers - 1 ? out : hidden;
      linear(prefix + ".layers." + std::to_string(i), layer_out, layer_in);
    }
  }
  void attention(const std::string& prefix, int64_t dim, int64_t internal) {
    linear(prefix + ".q_proj", internal, dim);
    linear(prefix + ".k_proj", internal, dim);
    linear(prefix + ".v_proj", internal, dim);
    linear(prefix + ".out_proj", dim, internal);
  }
  std::vector<WeightSpec> take() { return std::move(specs_); }

 private:
  std::vector<WeightSpec> specs_;
};

void add_trunk(ManifestBuilder& m, const ModelConfig& c) {
  const HieraConfig& t = c.trunk;
  const std::string p = "image_encoder.trunk";
  m.add(p + ".pos_embed", {1, t.embed_dim, t.window_pos_embed_bkg_spatial_size[0],
                           t.window_pos_embed_bkg_spatial_size[1]});
  m.add(p + ".pos_embed_window", {1, t.embed_dim, t.window_spec[0], t.window_spec[0]});
  m.conv(p + ".patch_embed.proj", t.embed_dim, 3, 7, 7);
  int64_t dim = t.embed_dim;
  int block = 0;
  for (size_t stage = 0; stage < t.stages.size(); ++stage) {
    for (int i = 0; i < t.stages[stage]; ++i, ++block) {
      int64_t dim_out = (stage > 0 && i == 0) ? dim * 2 : dim;
      const std::string b = p + ".blocks." + std::to_string(block);
      auto hidden = static_cast<int64_t>(static_cast<double>(dim_out) * t.mlp_ratio);
      m.norm(b + ".norm1", dim);
      m.linear(b + ".attn.qkv", 3 * dim_out, dim);
      m.linear(b + ".attn.proj", dim_out, dim_out);
      m.norm(b + ".norm2", dim_out);
      m.linear(b + ".mlp.layers.0", hidden, dim_out);
      m.linear(b + ".mlp.layers.1", dim_out, hidden);
      if (dim_out != dim) m.linear(b + ".proj", dim_out, dim);
      dim = dim_out;
    }
  }
}

void add_neck(ManifestBuilder& m, const ModelConfig& c) {
  for (size_t i = 0; i < c.neck.backbone_channel_list.size(); ++i) {
    m.conv("image_encoder.neck.convs." + std::to_string(i) + ".conv", c.neck.d_model,
           c.neck.backbone_channel_list[i], 1, 1);
  }
}

void add_prompt_encoder(ManifestBuilder& m, const ModelConfig& c) {
  const int64_t d = c.embed_dim();
  const std::string p = "sam_prompt_encoder";
  m.add(p + ".pe_layer.positional_encoding_gaussian_matrix", {2, d / 2});
  for (int i = 0; i < 4; ++i) m.add(p + ".point_embeddings." + std::to_string(i) + ".weight", {1, d});
  m.add(p + ".not_a_point_embed.weight", {1, d});
  const int64_t mc = c.mask_in_chans;
  m.conv(p + ".mask_downscaling.0", mc / 4, 1, 2, 2);
  m.norm(p + ".mask_downscaling.1", mc / 4);
  m.conv(p + ".mask_downscaling.3", mc, mc / 4, 2, 2);
  m.norm(p + ".mask_downscaling.4", mc);
  m.conv(p + ".mask_downscaling.6", d, mc, 1, 1);
  m.add(p + ".no_mask_embed.weight", {1, d});
}

void add_mask_decoder(ManifestBuilder& m, const ModelConfig& c) {
  const int64_t d = c.embed_dim();
  const int64_t cross = d / c.attention_downsample_rate;
  const std::string p = "sam_mask_decoder";
  const std::string t = p + ".transformer";
  for (int layer = 0; layer < c.decoder_depth; ++layer) {
    const std::string l = t + ".layers." + std::to_string(layer);
    m.attention(l + ".self_attn", d, d);
    m.norm(l + ".norm1", d);
    m.attention(l + ".cross_attn_token_to_image", d, cross);
    m.norm(l + ".norm2", d);
    m.linear(l + ".mlp.layers.0", c.decoder_mlp_dim, d);
    m.linear(l + ".mlp.layers.1", d, c.decoder_mlp_dim);
    m.norm(l + ".norm3", d);
    m.norm(l + ".norm4", d);
    m.attention(l + ".cross_attn_image_to_token", d, cross);
  }
  m.attention(t + ".final_attn_token_to_image", d, cross);
  m.norm(t + ".norm_final_attn", d);
  const int64_t num_mask_tokens = c.num_multimask_outputs + 1;
  m.add(p + ".iou_token.weight", {1, d});
  m.add(p + ".mask_tokens.weight", {num_mask_tokens, d});
  m.add(p + ".obj_score_token.weight", {1, d});
  m.conv_transpose(p + ".output_upscaling.0", d, d / 4, 2);
  m.norm(p + ".output_upscaling.1", d / 4);
  m.conv_transpose(p + ".output_upscaling.3", d / 4, d / 8, 2);
  m.conv(p + ".conv_s0", d / 8, d, 1, 1);
  m.conv(p + ".conv_s1", d / 4, d, 1, 1);
  for (int64_t i = 0; i < num_mask_tokens; ++i) {
    m.mlp(p + ".output_hypernetworks_mlps." + std::to_string(i), d, d, d / 8, 3);
  }
  m.mlp(p + ".iou_prediction_head", d, c.iou_head_hidden_dim, num_mask_tokens, c.iou_head_depth);
  m.mlp(p + ".pred_obj_score_head", d, d, 1, 3);
}

}  // namespace

std::vector<WeightSpec> image_path_weights(const ModelConfig& config) {
  ManifestBuilder m;
  m.add("no_mem_embed", {1, 1, config.embed_dim()});
  add_trunk(m, config);
  add_neck(m, config);
  add_prompt_encoder(m, config);
  add_mask_decoder(m, config);
  return m.take();
}

void validate_weights(const WeightMap& weights, const ModelConfig& config) {
  for (const WeightSpec& spec : image_path_weights(config)) {
    if (!weights.contains(spec.key)) {
      throw Error("checkpoint is missing key '" + spec.key + "' (expected shape " +
                  shape_to_string(spec.shape) + "); is it a SAM 2.1 checkpoint of variant '" +
                  config.name + "'?");
    }
    const Tensor& t = weights.at(spec.key);
    if (t.shape() != spec.shape) {
      throw Error("checkpoint key '" + spec.key + "' has shape " + shape_to_string(t.shape()) +
                  " but variant '" + config.name + "' needs " + shape_to_string(spec.shape) +
                  "; pick the matching --variant or --config");
    }
    // A NaN or Inf weight would silently turn every mask into garbage.
    const int64_t bad = first_non_finite(t.data(), t.numel());
    if (bad < t.numel()) {
      throw Error("checkpoint key '" + spec.key + "' holds a non-finite value (" +
                  (std::isnan(t[bad]) ? "NaN" : "Inf") + ") at flat index " + std::to_string(bad) +
                  "; the checkpoint is corrupted, download or export it again");
    }
  }
}

}  // namespace sam2rt
