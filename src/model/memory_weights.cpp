#include "model/memory_weights.h"

#include "model/synthetic_weights.h"

namespace sam2rt {

std::vector<std::pair<std::string, Shape>> memory_module_shapes(const ModelConfig& config) {
  const MemoryAttentionConfig& a = config.memory_attention;
  const MemoryEncoderConfig& e = config.memory_encoder;
  const int64_t c = config.embed_dim(), mem = config.mem_dim();
  std::vector<std::pair<std::string, Shape>> shapes;
  auto linear = [&shapes](const std::string& name, int64_t out, int64_t in) {
    shapes.emplace_back(name + ".weight", Shape{out, in});
    shapes.emplace_back(name + ".bias", Shape{out});
  };
  auto norm = [&shapes](const std::string& name, int64_t width) {
    shapes.emplace_back(name + ".weight", Shape{width});
    shapes.emplace_back(name + ".bias", Shape{width});
  };
  auto conv = [&shapes](const std::string& name, int64_t out, int64_t in, int64_t kernel) {
    shapes.emplace_back(name + ".weight", Shape{out, in, kernel, kernel});
    shapes.emplace_back(name + ".bias", Shape{out});
  };
  for (int i = 0; i < a.num_layers; ++i) {
    const std::string p = "memory_attention.layers." + std::to_string(i);
    const struct {
      const char* name;
      const RopeAttentionConfig& r;
    } attentions[] = {{".self_attn", a.self_attention}, {".cross_attn_image", a.cross_attention}};
    for (const auto& [name, r] : attentions) {
      const int64_t internal = c / r.downsample_rate, kv = r.kv_in_dim > 0 ? r.kv_in_dim : c;
      linear(p + name + ".q_proj", internal, c);
      linear(p + name + ".k_proj", internal, kv);
      linear(p + name + ".v_proj", internal, kv);
      linear(p + name + ".out_proj", c, internal);
    }
    linear(p + ".linear1", a.dim_feedforward, c);
    linear(p + ".linear2", c, a.dim_feedforward);
    for (const char* n : {".norm1", ".norm2", ".norm3"}) norm(p + n, c);
  }
  norm("memory_attention.norm", c);

  const std::string d = "memory_encoder.mask_downsampler.encoder.";
  int64_t channels = 1, index = 0;
  for (int stride = 1; stride < e.downsampler_total_stride; stride *= e.downsampler_stride) {
    const int64_t out = channels * e.downsampler_stride * e.downsampler_stride;
    conv(d + std::to_string(index), out, channels, e.downsampler_kernel_size);
    norm(d + std::to_string(index + 1), out);
    channels = out;
    index += 3;
  }
  conv(d + std::to_string(index), e.downsampler_embed_dim, channels, 1);
  conv("memory_encoder.pix_feat_proj", e.in_dim, e.in_dim, 1);
  for (int i = 0; i < e.fuser_num_layers; ++i) {
    const std::string p = "memory_encoder.fuser.layers." + std::to_string(i);
    conv(p + ".dwconv", e.fuser_dim, 1, e.fuser_kernel_size);
    norm(p + ".norm", e.fuser_dim);
    linear(p + ".pwconv1", 4 * e.fuser_dim, e.fuser_dim);
    linear(p + ".pwconv2", e.fuser_dim, 4 * e.fuser_dim);
    shapes.emplace_back(p + ".gamma", Shape{e.fuser_dim});
  }
  if (e.out_dim != e.in_dim) conv("memory_encoder.out_proj", e.out_dim, e.in_dim, 1);

  shapes.emplace_back("maskmem_tpos_enc", Shape{config.num_maskmem, 1, 1, mem});
  shapes.emplace_back("no_mem_embed", Shape{1, 1, c});
  shapes.emplace_back("no_mem_pos_enc", Shape{1, 1, c});
  shapes.emplace_back("no_obj_ptr", Shape{1, c});
  shapes.emplace_back("no_obj_embed_spatial", Shape{1, mem});
  for (int i = 0; i < 3; ++i) linear("obj_ptr_proj.layers." + std::to_string(i), c, c);
  linear("obj_ptr_tpos_proj", mem, c);
  conv("mask_downsample", 1, 1, 4);  // SAM2Base's mask input -> low-res logits (_use_mask_as_output)
  return shapes;
}

WeightMap synthetic_memory_weights(const ModelConfig& config, uint64_t salt) {
  WeightMap weights;
  for (const auto& [key, shape] : memory_module_shapes(config)) weights.insert(key, generate_weight(key, shape, salt));
  return weights;
}

}  // namespace sam2rt
