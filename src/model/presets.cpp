#include <algorithm>

#include "core/error.h"
#include "model/config.h"

namespace sam2rt {

int ModelConfig::num_blocks() const {
  int total = 0;
  for (int n : trunk.stages) total += n;
  return total;
}

std::vector<std::string> preset_names() { return {"tiny", "small", "base_plus", "large"}; }

ModelConfig preset_config(const std::string& variant) {
  ModelConfig config;  // defaults are Hiera's constructor defaults, as in the YAMLs
  if (variant == "tiny" || variant == "t") {
    config.name = "tiny";
    config.trunk.embed_dim = 96;
    config.trunk.num_heads = 1;
    config.trunk.stages = {1, 2, 7, 2};
    config.trunk.global_att_blocks = {5, 7, 9};
    config.trunk.window_pos_embed_bkg_spatial_size = {7, 7};
    config.neck.backbone_channel_list = {768, 384, 192, 96};
  } else if (variant == "small" || variant == "s") {
    config.name = "small";
    config.trunk.embed_dim = 96;
    config.trunk.num_heads = 1;
    config.trunk.stages = {1, 2, 11, 2};
    config.trunk.global_att_blocks = {7, 10, 13};
    config.trunk.window_pos_embed_bkg_spatial_size = {7, 7};
    config.neck.backbone_channel_list = {768, 384, 192, 96};
  } else if (variant == "base_plus" || variant == "b+" || variant == "base-plus") {
    config.name = "base_plus";
    config.trunk.embed_dim = 112;
    config.trunk.num_heads = 2;
    config.neck.backbone_channel_list = {896, 448, 224, 112};
  } else if (variant == "large" || variant == "l") {
    config.name = "large";
    config.trunk.embed_dim = 144;
    config.trunk.num_heads = 2;
    config.trunk.stages = {2, 6, 36, 4};
    config.trunk.global_att_blocks = {23, 33, 43};
    config.trunk.window_pos_embed_bkg_spatial_size = {7, 7};
    config.trunk.window_spec = {8, 4, 16, 8};
    config.neck.backbone_channel_list = {1152, 576, 288, 144};
  } else {
    throw Error("unknown variant '" + variant + "': use tiny, small, base_plus or large");
  }
  return config;
}

namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw Error("invalid model config: " + what);
}

}  // namespace

void validate_config(const ModelConfig& c) {
  const HieraConfig& t = c.trunk;
  require(c.image_size > 0 && c.image_size <= 8192, "image_size must be in 1..8192");
  require(c.backbone_stride == 16, "backbone_stride must be 16");
  require(c.image_size % 32 == 0, "image_size must be a multiple of 32 (got " +
                                      std::to_string(c.image_size) + ")");
  require(t.embed_dim > 0 && t.embed_dim <= 4096, "trunk embed_dim must be in 1..4096");
  require(t.num_heads > 0, "trunk num_heads must be positive");
  require(t.stages.size() == 4, "trunk stages must list 4 stages");
  require(t.window_spec.size() == t.stages.size(), "trunk window_spec must have one entry per stage");
  for (int n : t.stages) require(n > 0 && n <= 256, "every trunk stage needs 1..256 blocks");
  for (int w : t.window_spec) require(w >= 0 && w <= 1024, "trunk window_spec entries must be in 0..1024");
  require(t.q_pool >= 0 && t.q_pool <= 3, "trunk q_pool must be in 0..3");
  require(t.q_stride[0] == 2 && t.q_stride[1] == 2, "only q_stride [2, 2] is supported");
  require(t.dim_mul == 2.0 && t.head_mul == 2.0, "only dim_mul 2 and head_mul 2 are supported");
  require(t.mlp_ratio == 4.0, "only mlp_ratio 4 is supported");
  for (int b : t.global_att_blocks) {
    require(b >= 0 && b < c.num_blocks(), "global_att_blocks entry " + std::to_string(b) +
                                              " is not a block index (model has " +
                                              std::to_string(c.num_blocks()) + " blocks)");
  }
  const auto& bkg = t.window_pos_embed_bkg_spatial_size;
  require(bkg[0] > 0 && bkg[1] > 0 && bkg[0] <= 1024 && bkg[1] <= 1024,
          "window_pos_embed_bkg_spatial_size must be positive");
  int grid = c.image_size / 4;
  require(t.window_spec[0] > 0 && grid % t.window_spec[0] == 0,
          "window_spec[0] (" + std::to_string(t.window_spec[0]) +
              ") must tile the patch grid " + std::to_string(grid) +
              " (the window position embedding is tiled over it)");
  int dim = t.embed_dim;
  int heads = t.num_heads;
  for (size_t s = 0; s < t.stages.size(); ++s) {
    require(dim % heads == 0, "stage " + std::to_string(s + 1) + " width " + std::to_string(dim) +
                                  " is not divisible by its " + std::to_string(heads) + " heads");
    dim *= 2;
    heads *= 2;
  }
  const NeckConfig& n = c.neck;
  require(n.d_model > 0 && n.d_model % 8 == 0 && n.d_model <= 4096,
          "neck d_model must be a positive multiple of 8");
  require(n.d_model % c.decoder_num_heads == 0, "neck d_model must be divisible by 8 decoder heads");
  require((n.d_model / c.attention_downsample_rate) % c.decoder_num_heads == 0,
          "neck d_model / 2 must be divisible by 8 decoder heads");
  require(n.backbone_channel_list.size() == 4, "neck backbone_channel_list must have 4 entries");
  for (size_t i = 0; i < 4; ++i) {
    int expected = t.embed_dim << (3 - i);
    require(n.backbone_channel_list[i] == expected,
            "neck backbone_channel_list[" + std::to_string(i) + "] is " +
                std::to_string(n.backbone_channel_list[i]) + " but the trunk gives " +
                std::to_string(expected) + " channels");
  }
  for (int level : n.fpn_top_down_levels) require(level >= 0 && level < 4, "fpn_top_down_levels entries must be in 0..3");
  require(n.fpn_interp_model == "nearest", "only fpn_interp_model 'nearest' is supported");
  require(n.scalp == 1, "only scalp 1 is supported (the image predictor needs 3 levels)");
  require(n.pos_num_pos_feats == n.d_model, "position_encoding num_pos_feats must equal d_model");
  require(n.pos_temperature > 0, "position_encoding temperature must be positive");
  require(t.q_pool == 3, "only q_pool 3 is supported (SAM 2.1 image path needs stride 32)");
}

void validate_memory_config(const ModelConfig& c) {
  const MemoryAttentionConfig& a = c.memory_attention;
  const MemoryEncoderConfig& e = c.memory_encoder;
  const int width = c.embed_dim();
  require(a.d_model == width, "memory_attention d_model must equal the neck's d_model");
  require(a.num_layers > 0 && a.dim_feedforward > 0, "memory_attention needs layers and a feed-forward width");
  for (const RopeAttentionConfig* r : {&a.self_attention, &a.cross_attention}) {
    require(r->embedding_dim == width, "memory attention embedding_dim must equal d_model");
    require(r->num_heads > 0 && r->downsample_rate > 0 && width % r->downsample_rate == 0,
            "memory attention needs positive heads and a downsample rate dividing d_model");
    const int internal = width / r->downsample_rate;
    require(internal % r->num_heads == 0 && (internal / r->num_heads) % 4 == 0,
            "memory attention head width must be a multiple of 4 (two axes of complex pairs)");
    require(r->rope_theta > 0, "memory attention rope_theta must be positive");
  }
  require(!a.self_attention.rope_k_repeat && a.cross_attention.rope_k_repeat,
          "memory attention: only the cross-attention repeats its rotary frequencies along the keys");
  require(a.cross_attention.kv_in_dim == e.out_dim, "memory attention kv_in_dim must equal memory_encoder out_dim");
  require(!a.pos_enc_at_attn && a.pos_enc_at_cross_attn_keys && !a.pos_enc_at_cross_attn_queries,
          "memory attention position encodings: only at the cross-attention keys, as in SAM 2.1");
  require(e.in_dim == width && e.fuser_dim == width && e.downsampler_embed_dim == width,
          "memory_encoder in_dim, fuser dim and mask_downsampler embed_dim must equal d_model");
  require(e.out_dim > 0 && e.out_dim <= width && width % e.out_dim == 0,
          "memory_encoder out_dim must divide d_model (object pointers split into out_dim tokens)");
  require(e.pos_num_pos_feats == e.out_dim, "memory_encoder position_encoding num_pos_feats must equal out_dim");
  require(e.downsampler_stride > 1 && e.downsampler_kernel_size > 0 && e.downsampler_padding >= 0,
          "memory_encoder mask_downsampler needs a stride above 1");
  int layers = 0;
  for (int s = 1; s < e.downsampler_total_stride; s *= e.downsampler_stride) ++layers;
  int reached = 1;
  for (int i = 0; i < layers; ++i) reached *= e.downsampler_stride;
  require(reached == e.downsampler_total_stride && e.downsampler_total_stride == c.backbone_stride,
          "memory_encoder mask_downsampler: total_stride must be a power of stride equal to the backbone stride");
  require(e.fuser_num_layers >= 0 && e.fuser_kernel_size == 2 * e.fuser_padding + 1,
          "memory_encoder fuser: kernel_size must be 2 * padding + 1 (the map keeps its size)");
  require(c.num_maskmem > 0 && c.max_obj_ptrs_in_encoder > 1, "num_maskmem and max_obj_ptrs_in_encoder too small");
}

}  // namespace sam2rt
