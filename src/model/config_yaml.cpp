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
