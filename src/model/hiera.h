#pragma once

#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/op_types.h"
#include "backends/row_source.h"
#include "core/tensor.h"
#include "core/weights.h"
#include "kernels/interpolate.h"
#include "model/config.h"

namespace sam2rt {

// Shape of one MultiScaleBlock (sam2/modeling/backbones/hieradet.py).
struct HieraBlockSpec {
  int dim = 0;       // input width
  int dim_out = 0;   // output width (2 * dim on a stage's first block)
  int heads = 0;     // attention heads of the output width
  int window = 0;    // window side on the block's INPUT grid; 0 = global attention
  bool q_pool = false;  // 2x2 max-pool of q and of the residual (halves the grid)
};

// Every block's spec with the official one-block window lag: the first block of
// stage s+1 still uses window_spec[s] (on the un-pooled grid).
std::vector<HieraBlockSpec> hiera_block_specs(const HieraConfig& config);

// Indices of the last block of each stage (Hiera.stage_ends).
std::vector<int> hiera_stage_ends(const HieraConfig& config);

// The two parameters of a Conv2d or LayerNorm layer, resident on the backend.
struct WeightAndBias {
  DeviceTensor weight, bias;
};

// A block's layers on the backend, the Linear ones in the encoder's precision.
struct HieraBlockLayers {
  WeightAndBias norm1, norm2;
  LinearHandle qkv, attn_proj, mlp_in, mlp_out;
  LinearHandle proj;    // residual projection; only when dim != dim_out
  DeviceTensor qkv_bias;  // what a zero padding token becomes under qkv
};

// Hiera._get_pos_embed: bicubic resize of pos_embed [1, C, h0, w0] to (h, w) plus
// pos_embed_window [1, C, w0, w0] tiled over it, token-major [h, w, C]. On the
// CPU made row by row when added, never stored: it is as large as the first
// stage's activations (25 MB for Tiny at 1024) and as cheap to recompute as to
// read; a device backend keeps it resident.
class HieraPositionEmbedding final : public RowSource {
 public:
  HieraPositionEmbedding(const Tensor& pos_embed, const Tensor& pos_embed_window, int64_t height, int64_t width);

  Shape shape() const override { return {background_.height(), background_.width(), background_.channels()}; }
  // out [w, C] = row y of the embedding.
  void row(int64_t y, float* out) const override;

 private:
  BicubicRows background_;
  Tensor window_;  // [w0, w0, C]
};

// The whole HieraPositionEmbedding as one tensor [h, w, C].
Tensor hiera_position_embedding(const Tensor& pos_embed, const Tensor& pos_embed_window, int64_t height,
                                int64_t width);

// The Hiera trunk of an image encoder at config.image_size.
class HieraTrunk {
 public:
  // Makes the image_encoder.trunk.* weights resident on `backend` (the CPU
  // shares their memory; its Linear layers are made ready for `precision` on
  // their first call) with the position embedding of the patch grid. The
  // backend runs every op and must outlive the trunk.
  HieraTrunk(const ModelConfig& config, const WeightMap& weights, Precision precision, Backend& backend);

  // patch_embed(image) + position embedding: image [1, 3, S, S] -> [S/4, S/4, C0],
  // the input of blocks[0].
  DeviceTensor embed(const DeviceTensor& image) const;

  // All blocks; returns the output of each stage's last block, token-major,
  // highest resolution first (Hiera.forward, before its NCHW permute).
  // `embedded` is consumed: the first block may update it in place.
  std::vector<DeviceTensor> forward_blocks(DeviceTensor embedded) const;

 private:
  // One MultiScaleBlock on a token-major map x [H, W, dim] -> [H', W', dim_out];
  // x may be updated in place when the block keeps its width.
  DeviceTensor block(DeviceTensor x, size_t index) const;
  // The block's attention (qkv included) on its normalised input [H, W, dim].
  DeviceTensor attention(const DeviceTensor& normed, size_t index) const;

  Precision precision_;
  Backend& backend_;
  std::vector<HieraBlockSpec> specs_;
  std::vector<HieraBlockLayers> blocks_;
  std::vector<int> stage_ends_;
  WeightAndBias patch_embed_;
  DeviceTensor position_embedding_;  // [S/4, S/4, C0], a constant_rows
};

}  // namespace sam2rt
