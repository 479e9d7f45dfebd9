#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "io/printable_text.h"
#include "model/config.h"

namespace sam2rt {

namespace {

constexpr const char* kSam2Base = "sam2.modeling.sam2_base.SAM2Base";
constexpr const char* kImageEncoder = "sam2.modeling.backbones.image_encoder.ImageEncoder";
constexpr const char* kHiera = "sam2.modeling.backbones.hieradet.Hiera";
constexpr const char* kFpnNeck = "sam2.modeling.backbones.image_encoder.FpnNeck";
constexpr const char* kSinePe = "sam2.modeling.position_encoding.PositionEmbeddingSine";
constexpr const char* kMemoryAttention = "sam2.modeling.memory_attention.MemoryAttention";
constexpr const char* kMemoryAttentionLayer = "sam2.modeling.memory_attention.MemoryAttentionLayer";
constexpr const char* kRopeAttention = "sam2.modeling.sam.transformer.RoPEAttention";
constexpr const char* kMemoryEncoder = "sam2.modeling.memory_encoder.MemoryEncoder";
constexpr const char* kMaskDownSampler = "sam2.modeling.memory_encoder.MaskDownSampler";
constexpr const char* kFuser = "sam2.modeling.memory_encoder.Fuser";
constexpr const char* kCxBlock = "sam2.modeling.memory_encoder.CXBlock";

class YamlReader {
 public:
  explicit YamlReader(std::string origin) : origin_(std::move(origin)) {}

  YAML::Node child(const YAML::Node& parent, const std::string& key, const std::string& path,
                   const char* expected_target) const {
    YAML::Node node = parent[key];
    if (!node || !node.IsMap()) fail(path + "." + key + " is missing or not a mapping");
    YAML::Node target = node["_target_"];
    if (!target || target.as<std::string>() != expected_target) {
      fail(path + "." + key + "._target_ is '" + (target ? printable(target.as<std::string>()) : std::string()) +
           "', expected '" + expected_target + "'");
    }
    return node;
  }

  template <typename T>
  void read(const YAML::Node& node, const std::string& key, const std::string& path, T& out) const {
    YAML::Node value = node[key];
    if (!value || value.IsNull()) return;  // keep the constructor default, as hydra does
    try {
      out = value.as<T>();
    } catch (const YAML::Exception&) {
      fail(path + "." + key + " has an unexpected type");
    }
  }

  template <typename T, size_t N>
  void read(const YAML::Node& node, const std::string& key, const std::string& path,
            std::array<T, N>& out) const {
    std::vector<T> values;
    read(node, key, path, values);
    if (values.empty()) return;
    if (values.size() != N) fail(path + "." + key + " must have " + std::to_string(N) + " entries");
    for (size_t i = 0; i < N; ++i) out[i] = values[i];
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw Error("config " + origin_ + ": " + what);
  }

 private:
  std::string origin_;
};

void read_rope_attention(const YamlReader& reader, const YAML::Node& node, const std::string& path,
                         RopeAttentionConfig& out) {
  reader.read(node, "embedding_dim", path, out.embedding_dim);
  reader.read(node, "num_heads", path, out.num_heads);
  reader.read(node, "downsample_rate", path, out.downsample_rate);
  reader.read(node, "rope_theta", path, out.rope_theta);
  reader.read(node, "feat_sizes", path, out.feat_sizes);
  reader.read(node, "kv_in_dim", path, out.kv_in_dim);
  reader.read(node, "rope_k_repeat", path, out.rope_k_repeat);
}

// model.memory_attention and model.memory_encoder, where the YAML has them (an
// image-only config may leave them out: the defaults are the official ones).
void read_memory_modules(const YamlReader& reader, const YAML::Node& model, ModelConfig& config) {
  if (model["memory_attention"]) {
    const std::string p = "model.memory_attention";
    YAML::Node attention = reader.child(model, "memory_attention", "model", kMemoryAttention);
    YAML::Node layer = reader.child(attention, "layer", p, kMemoryAttentionLayer);
    MemoryAttentionConfig& m = config.memory_attention;
    reader.read(attention, "d_model", p, m.d_model);
    reader.read(attention, "num_layers", p, m.num_layers);
    reader.read(attention, "pos_enc_at_input", p, m.pos_enc_at_input);
    const std::string lp = p + ".layer";
    int layer_d_model = m.d_model;
    reader.read(layer, "d_model", lp, layer_d_model);
    if (layer_d_model != m.d_model) reader.fail(lp + ".d_model must equal " + p + ".d_model");
    std::string activation = "relu";
    reader.read(layer, "activation", lp, activation);
    if (activation != "relu") reader.fail(lp + ".activation must be relu, as in SAM 2.1");
    reader.read(layer, "dim_feedforward", lp, m.dim_feedforward);
    reader.read(layer, "pos_enc_at_attn", lp, m.pos_enc_at_attn);
    reader.read(layer, "pos_enc_at_cross_attn_keys", lp, m.pos_enc_at_cross_attn_keys);
    reader.read(layer, "pos_enc_at_cross_attn_queries", lp, m.pos_enc_at_cross_attn_queries);
    read_rope_attention(reader, reader.child(layer, "self_attention", lp, kRopeAttention), lp + ".self_attention",
                        m.self_attention);
    read_rope_attention(reader, reader.child(layer, "cross_attention", lp, kRopeAttention), lp + ".cross_attention",
                        m.cross_attention);
  }
  if (model["memory_encoder"]) {
    const std::string p = "model.memory_encoder";
    YAML::Node encoder = reader.child(model, "memory_encoder", "model", kMemoryEncoder);
    MemoryEncoderConfig& e = config.memory_encoder;
    reader.read(encoder, "out_dim", p, e.out_dim);
    reader.read(encoder, "in_dim", p, e.in_dim);
    YAML::Node pe = reader.child(encoder, "position_encoding", p, kSinePe);
    reader.read(pe, "num_pos_feats", p + ".position_encoding", e.pos_num_pos_feats);
    reader.read(pe, "temperature", p + ".position_encoding", e.pos_temperature);
    bool normalize = true;
    reader.read(pe, "normalize", p + ".position_encoding", normalize);
    if (!normalize || (pe["scale"] && !pe["scale"].IsNull())) {
      reader.fail(p + ".position_encoding must have normalize true and scale null");
    }
    YAML::Node downsampler = reader.child(encoder, "mask_downsampler", p, kMaskDownSampler);
    const std::string dp = p + ".mask_downsampler";
    reader.read(downsampler, "embed_dim", dp, e.downsampler_embed_dim);
    reader.read(downsampler, "kernel_size", dp, e.downsampler_kernel_size);
    reader.read(downsampler, "stride", dp, e.downsampler_stride);
    reader.read(downsampler, "padding", dp, e.downsampler_padding);
    reader.read(downsampler, "total_stride", dp, e.downsampler_total_stride);
    YAML::Node fuser = reader.child(encoder, "fuser", p, kFuser);
    YAML::Node block = reader.child(fuser, "layer", p + ".fuser", kCxBlock);
    reader.read(fuser, "num_layers", p + ".fuser", e.fuser_num_layers);
    bool input_projection = false;
    reader.read(fuser, "input_projection", p + ".fuser", input_projection);
    if (input_projection) reader.fail(p + ".fuser.input_projection must be false, as in SAM 2.1");
    const std::string bp = p + ".fuser.layer";
    reader.read(block, "dim", bp, e.fuser_dim);
    reader.read(block, "kernel_size", bp, e.fuser_kernel_size);
    reader.read(block, "padding", bp, e.fuser_padding);
    bool depthwise = true;
    reader.read(block, "use_dwconv", bp, depthwise);
    if (!depthwise) reader.fail(bp + ".use_dwconv must be true, as in SAM 2.1");
  }
  reader.read(model, "num_maskmem", "model", config.num_maskmem);
  reader.read(model, "max_obj_ptrs_in_encoder", "model", config.max_obj_ptrs_in_encoder);
  reader.read(model, "sigmoid_scale_for_mem_enc", "model", config.sigmoid_scale_for_mem_enc);
  reader.read(model, "sigmoid_bias_for_mem_enc", "model", config.sigmoid_bias_for_mem_enc);
}

}  // namespace

ModelConfig parse_config_yaml(const std::string& text, const std::string& origin) {
  YamlReader reader(origin);
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    reader.fail("not valid YAML (" + printable(e.what()) + ")");
  }
  if (!root || !root.IsMap()) reader.fail("top level is not a mapping");
  try {
    YAML::Node model = root["model"];
    if (!model || !model.IsMap()) reader.fail("no 'model' mapping");
    YAML::Node target = model["_target_"];
    if (!target || target.as<std::string>() != kSam2Base) {
      reader.fail("model._target_ must be '" + std::string(kSam2Base) + "'");
    }

    ModelConfig config;
    config.name = origin;
    // Hiera's constructor defaults apply to keys the YAML leaves out.
    YAML::Node encoder = reader.child(model, "image_encoder", "model", kImageEncoder);
    YAML::Node trunk = reader.child(encoder, "trunk", "model.image_encoder", kHiera);
    YAML::Node neck = reader.child(encoder, "neck", "model.image_encoder", kFpnNeck);
    YAML::Node pe = reader.child(neck, "position_encoding", "model.image_encoder.neck", kSinePe);

    const std::string tp = "model.image_encoder.trunk";
    HieraConfig& t = config.trunk;
    reader.read(trunk, "embed_dim", tp, t.embed_dim);
    reader.read(trunk, "num_heads", tp, t.num_heads);
    reader.read(trunk, "stages", tp, t.stages);
    reader.read(trunk, "global_att_blocks", tp, t.global_att_blocks);
    reader.read(trunk, "window_spec", tp, t.window_spec);
    reader.read(trunk, "window_pos_embed_bkg_spatial_size", tp, t.window_pos_embed_bkg_spatial_size);
    reader.read(trunk, "q_pool", tp, t.q_pool);
    reader.read(trunk, "q_stride", tp, t.q_stride);
    reader.read(trunk, "dim_mul", tp, t.dim_mul);
    reader.read(trunk, "head_mul", tp, t.head_mul);

    const std::string np = "model.image_encoder.neck";
    NeckConfig& n = config.neck;
    reader.read(encoder, "scalp", "model.image_encoder", n.scalp);
    reader.read(neck, "d_model", np, n.d_model);
    reader.read(neck, "backbone_channel_list", np, n.backbone_channel_list);
    reader.read(neck, "fpn_top_down_levels", np, n.fpn_top_down_levels);
    reader.read(neck, "fpn_interp_model", np, n.fpn_interp_model);
    reader.read(pe, "num_pos_feats", np + ".position_encoding", n.pos_num_pos_feats);
    reader.read(pe, "normalize", np + ".position_encoding", n.pos_normalize);
    reader.read(pe, "temperature", np + ".position_encoding", n.pos_temperature);
    if (pe["scale"] && !pe["scale"].IsNull()) reader.fail(np + ".position_encoding.scale must be null");
    if (!n.pos_normalize) reader.fail(np + ".position_encoding.normalize must be true");

    reader.read(model, "image_size", "model", config.image_size);
    reader.read(model, "use_high_res_features_in_sam", "model", config.use_high_res_features_in_sam);
    reader.read(model, "pred_obj_scores", "model", config.pred_obj_scores);
    reader.read(model, "pred_obj_scores_mlp", "model", config.pred_obj_scores_mlp);
    reader.read(model, "iou_prediction_use_sigmoid", "model", config.iou_prediction_use_sigmoid);
    if (!config.use_high_res_features_in_sam || !config.pred_obj_scores || !config.pred_obj_scores_mlp ||
        !config.iou_prediction_use_sigmoid) {
      reader.fail("SAM 2.1 image path needs use_high_res_features_in_sam, pred_obj_scores, "
                  "pred_obj_scores_mlp and iou_prediction_use_sigmoid set to true");
    }
    read_memory_modules(reader, model, config);
    validate_config(config);
    return config;
  } catch (const YAML::Exception& e) {
    reader.fail("malformed YAML (" + printable(e.what()) + ")");
  }
}

ModelConfig load_config_yaml(const std::string& path) {
  constexpr size_t kMaxConfigBytes = 1 << 20;
  // A device or a pipe (/dev/zero, a FIFO) would never end or never start.
  std::error_code ignored;
  if (!std::filesystem::is_regular_file(path, ignored)) {
    throw Error("config '" + path + "' is not a regular file; give the path of a .yaml model config");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open config '" + path + "'");
  std::string text(kMaxConfigBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > kMaxConfigBytes) throw Error("config '" + path + "' is larger than 1 MiB; not a model config");
  return parse_config_yaml(text, path);
}

}  // namespace sam2rt
