#pragma once

#include <string>
#include <vector>

#include "core/tensor.h"
#include "core/weights.h"
#include "kernels/buffer_pool.h"
#include "kernels/interpolate.h"
#include "kernels/matmul.h"
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

// The two parameters of a Linear, Conv2d or LayerNorm layer.
struct WeightAndBias {
  Tensor weight, bias;
};

// A block's layers, the Linear ones packed for oneDNN in the encoder's precision.
struct HieraBlockLayers {
  WeightAndBias norm1, norm2;
  PackedLinear qkv, attn_proj, mlp_in, mlp_out;
  PackedLinear proj;    // residual projection; only when dim != dim_out
  Tensor qkv_bias;      // what a zero padding token becomes under qkv
};

// Hiera._get_pos_embed: bicubic resize of pos_embed [1, C, h0, w0] to (h, w) plus
// pos_embed_window [1, C, w0, w0] tiled over it, token-major [h, w, C]. Made row
// by row when added, never stored: it is as large as the first stage's
// activations (25 MB for Tiny at 1024) and as cheap to recompute as to read.
class HieraPositionEmbedding {
 public:
  HieraPositionEmbedding(const Tensor& pos_embed, const Tensor& pos_embed_window, int64_t height, int64_t width);

  Shape shape() const { return {background_.height(), background_.width(), background_.channels()}; }
  // out [w, C] = row y of the embedding.
  void row(int64_t y, float* out) const;
  // x [h, w, C] += the embedding.
  void add_to(Tensor& x) const;

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
  // Reads the image_encoder.trunk.* weights (shared handles; the Linear layers
  // are made ready for `precision` on their first call) and prepares the
  // position embedding of the patch grid.
  // Activations come from `pool` (shared with the rest of the encoder).
  HieraTrunk(const ModelConfig& config, const WeightMap& weights, Precision precision,
             std::shared_ptr<BufferPool> pool);

  // patch_embed(image) + position embedding: image [1, 3, S, S] -> [S/4, S/4, C0],
  // the input of blocks[0].
  Tensor embed(const Tensor& image) const;

  // All blocks; returns the output of each stage's last block, token-major,
  // highest resolution first (Hiera.forward, before its NCHW permute).
  // `embedded` is consumed: the first block may update it in place.
  std::vector<Tensor> forward_blocks(Tensor embedded) const;

 private:
  // One MultiScaleBlock on a token-major map x [H, W, dim] -> [H', W', dim_out];
  // x may be updated in place when the block keeps its width.
  Tensor block(Tensor x, size_t index) const;
  Tensor attention(const Tensor& qkv, size_t index) const;

  Precision precision_;
  std::shared_ptr<BufferPool> pool_;
  std::vector<HieraBlockSpec> specs_;
  std::vector<HieraBlockLayers> blocks_;
  std::vector<int> stage_ends_;
  WeightAndBias patch_embed_;
  HieraPositionEmbedding position_embedding_;  // [S/4, S/4, C0]
};

}  // namespace sam2rt
