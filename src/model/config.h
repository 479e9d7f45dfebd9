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

// One RoPEAttention of the memory attention (sam/transformer.py): its width,
// heads, rotary base, the grid its frequencies were made for and, for the
// cross-attention, the width of the memory it reads and whether the query
// grid's frequencies repeat along the keys (one repeat per memory frame).
struct RopeAttentionConfig {
  int embedding_dim = 256;
  int num_heads = 1;
  int downsample_rate = 1;
  double rope_theta = 10000.0;
  std::array<int, 2> feat_sizes = {64, 64};
  int kv_in_dim = 0;  // 0: embedding_dim, as the official None
  bool rope_k_repeat = false;
};

// MemoryAttention and MemoryAttentionLayer (memory_attention.py). Defaults are
// the values of every official SAM 2.1 YAML (t, s, b+, l alike).
struct MemoryAttentionConfig {
  int d_model = 256;
  int num_layers = 4;
  int dim_feedforward = 2048;
  bool pos_enc_at_input = true;
  bool pos_enc_at_attn = false;
  bool pos_enc_at_cross_attn_keys = true;
  bool pos_enc_at_cross_attn_queries = false;
  RopeAttentionConfig self_attention;
  RopeAttentionConfig cross_attention{.kv_in_dim = 64, .rope_k_repeat = true};
};

// MemoryEncoder with its MaskDownSampler, Fuser of CXBlocks and sine position
// encoding (memory_encoder.py); defaults as MemoryAttentionConfig's.
struct MemoryEncoderConfig {
  int out_dim = 64;  // mem_dim
  int in_dim = 256;
  int pos_num_pos_feats = 64;
  double pos_temperature = 10000.0;
  int downsampler_embed_dim = 256;
  int downsampler_kernel_size = 3;
  int downsampler_stride = 2;
  int downsampler_padding = 1;
  int downsampler_total_stride = 16;
  int fuser_num_layers = 2;
  int fuser_dim = 256;
  int fuser_kernel_size = 7;
  int fuser_padding = 3;
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

  // The video path (SAM2Base's memory): its modules and how many memories it keeps.
  MemoryAttentionConfig memory_attention;
  MemoryEncoderConfig memory_encoder;
  int num_maskmem = 7;
  int max_obj_ptrs_in_encoder = 16;
  double sigmoid_scale_for_mem_enc = 20.0;
  double sigmoid_bias_for_mem_enc = -10.0;

  int embed_dim() const { return neck.d_model; }                       // prompt/decoder width
  int image_embedding_size() const { return image_size / backbone_stride; }
  int low_res_mask_size() const { return 4 * image_embedding_size(); }
  int num_blocks() const;
  // The width of a memory token: the memory encoder's output (SAM2Base.mem_dim).
  int mem_dim() const { return memory_encoder.out_dim; }
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
// The same for the video path's modules (MemoryAttentionConfig, MemoryEncoderConfig,
// num_maskmem, ...), which the image path never reads.
void validate_memory_config(const ModelConfig& config);

}  // namespace sam2rt
