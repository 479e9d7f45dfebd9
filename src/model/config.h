#pragma once

#include <array>
#include <string>
#include <vector>

namespace sam2rt {

// Hiera trunk hyper-parameters (sam2/modeling/backbones/hieradet.py, Hiera.__init__).
struct HieraConfig {
  int embed_dim = 96;
  int num_heads = 1;
  std::vector<int> stages = {2, 3, 16, 3};
  std::vector<int> global_att_blocks = {12, 16, 20};
  std::vector<int> window_spec = {8, 4, 14, 7};
  std::array<int, 2> window_pos_embed_bkg_spatial_size = {14, 14};
  int q_pool = 3;
  std::array<int, 2> q_stride = {2, 2};
  double dim_mul = 2.0;
  double head_mul = 2.0;
  double mlp_ratio = 4.0;
};

// FPN neck and its sine position encoding (image_encoder.py, position_encoding.py).
struct NeckConfig {
  int d_model = 256;
  std::vector<int> backbone_channel_list = {768, 384, 192, 96};
  std::vector<int> fpn_top_down_levels = {2, 3};
  std::string fpn_interp_model = "nearest";
  int scalp = 1;
  int pos_num_pos_feats = 256;
  bool pos_normalize = true;
  double pos_temperature = 10000.0;
};

// The image path of a SAM 2.1 model. Values not in the YAML (decoder sizes) are
// the constants SAM2Base._build_sam_heads hard-codes, plus the build_sam2
// post-processing overrides (dynamic multimask via stability).
struct ModelConfig {
  std::string name = "tiny";
  int image_size = 1024;
  int backbone_stride = 16;
  HieraConfig trunk;
  NeckConfig neck;

  bool use_high_res_features_in_sam = true;
  bool pred_obj_scores = true;
  bool pred_obj_scores_mlp = true;
  bool iou_prediction_use_sigmoid = true;
  int num_multimask_outputs = 3;
  int decoder_depth = 2;
  int decoder_num_heads = 8;
  int decoder_mlp_dim = 2048;
  int attention_downsample_rate = 2;
  int iou_head_depth = 3;
  int iou_head_hidden_dim = 256;
  int mask_in_chans = 16;
  double stability_delta = 0.05;
  double stability_thresh = 0.98;
  float mask_threshold = 0.0f;

  int embed_dim() const { return neck.d_model; }                       // prompt/decoder width
  int image_embedding_size() const { return image_size / backbone_stride; }
  int low_res_mask_size() const { return 4 * image_embedding_size(); }
  int num_blocks() const;
};

// Built-in presets with the values of sam2/configs/sam2.1/sam2.1_hiera_{t,s,b+,l}.yaml.
// Accepts tiny|small|base_plus|large (also t|s|b+|l). Throws Error otherwise.
ModelConfig preset_config(const std::string& variant);
std::vector<std::string> preset_names();

// Reads an official-format YAML (the `_target_` tree under `model:`).
ModelConfig load_config_yaml(const std::string& path);
ModelConfig parse_config_yaml(const std::string& text, const std::string& origin);

// Throws Error naming the first impossible value (zero sizes, windows that do
// not fit the stage grids, inconsistent channel lists, ...).
void validate_config(const ModelConfig& config);

}  // namespace sam2rt
