#pragma once

#include <vector>

#include "core/tensor.h"
#include "model/two_way_weights.h"

namespace sam2rt {

// The two-block TwoWayTransformer of SAM 2.1 for prompts that share the image
// side (every prompt without a mask input), with the image rows kept factored.
//
// Image -> token attention adds to every image row a combination of the
// attention's heads * tokens value rows (its out projection of the token
// values), weighted by that row's softmax; LayerNorm is a per-row affine map
// whose statistics follow from row products. So after block k every image row is
//   row_scale[i] * shared_k[i] + coef[i] . basis + bias,
// shared_k a per-image map (the centered src times the LayerNorm weights), and
// coef (heads * tokens per block), basis and bias per prompt. The projections of
// these rows (the next block's keys, values and queries, the final attention's
// keys and values, the first ConvTranspose of the upscaling) split into a
// projection of shared_k made once per image and a product of the prompt's
// coefficients, K = heads * tokens per block instead of the width C. The
// attention scores against the token keys are per-head dot products
// (kernels/decoder/head_products). Same function as the reference MaskDecoder's
// transformer in exact arithmetic; the rounding differs. The derivation, and
// which test checks each identity: docs/LOW_RANK.md.

// The image rows after the transformer: row i = row_scale[i] * shared[i] + coef[i] . basis + bias,
// shared = LowRankImage::final_shared.
struct LowRankKeys {
  Tensor row_scale;  // [HW]
  Tensor coef;       // [HW, R]
  Tensor basis;      // [R, C]
  Tensor bias;       // [C]
};

// A prompt's tokens [T, C] and image rows after block 0: row i = row_scale[i] *
// s_i + coef[i] . basis + bias, s the image's src plus block 0's image -> token
// out_proj bias, centered per row, times block 0's norm4 weight. What the
// stage-by-stage comparison with the reference decoder reads.
struct LowRankBlock0 {
  Tensor queries;
  LowRankKeys keys;
};

// What every prompt on the image shares, from TransformerImageInput (src S, pe).
// Names: S~ = S + out bias of block 0's image->token attention, centered per
// row; s = S~ * g1 (block 0's norm4 weight); s~ = s centered per row; s2 = s~ * g2
// (block 1's norm4 weight); c~ = block 0's norm4 bias + block 1's out bias, centered.
struct LowRankImage {
  Tensor src_norm2;        // |S~_i|^2 [HW]
  Tensor src_out0;         // S~ Wo0 (block 0 image->token out_proj weight) [HW, D]
  Tensor keys1_shared;     // s Wk^T, block 1 token->image k_proj [HW, D]
  Tensor keys1_const;      // (b1 + pe) Wk^T + bk [HW, D]
  Tensor values1_shared;   // s Wv^T [HW, D]
  Tensor values1_const;    // b1 Wv^T + bv [D]
  Tensor queries2_shared;  // s Wq^T, block 1 image->token q_proj [HW, D]
  Tensor queries2_const;   // (b1 + pe) Wq^T + bq [HW, D]
  Tensor s_norm2;          // |s~_i|^2 [HW]
  Tensor s_dot_g1;         // s~_i . g1 [HW]
  Tensor s_dot_c;          // s~_i . c~ [HW]
  Tensor s_g1_out0;        // (g1 * s~) Wo0 [HW, D]
  Tensor s_out2;           // s~ Wo2 (block 1 image->token out_proj weight) [HW, D]
  Tensor c_centered;       // c~ [C]
  double c_norm2 = 0;      // |c~|^2
  Tensor final_shared;     // s2 [HW, C]
  Tensor final_keys_shared;     // s2 Wk^T, final attention [HW, D]
  Tensor final_keys_const;      // (b2 + pe) Wk^T + bk [HW, D]
  Tensor final_values_shared;   // s2 Wv^T [HW, D]
  Tensor final_values_const;    // b2 Wv^T + bv [D]
};

class LowRankTwoWayTransformer {
 public:
  explicit LowRankTwoWayTransformer(const TwoWayTransformerWeights& transformer);

  LowRankImage prepare_image(const TransformerImageInput& input, const Tensor& image_pe, int threads) const;

  // The tokens after the two blocks, before the final token -> image
  // attention, and the image rows after them (what that attention reads).
  struct Output {
    Tensor queries;    // [T, C]
    Tensor query_pe;   // [T, C]: the tokens as given (their own position encoding)
    LowRankKeys keys;
    Tensor finished;   // [finish_rows.size(), C]: final_tokens of forward's finish_rows
  };
  // Several prompts' tokens [T_g, C] in lockstep: every step's per-image arrays
  // (keys, values, queries, statistics: ~30 MB for Tiny) are read a block of
  // rows at a time for all of them, instead of streamed from memory once per
  // prompt. Image rows are processed in fixed blocks shared by `threads`
  // workers: the result does not depend on the thread count, and output g
  // equals that of a group of one bit for bit.
  // The final attention and norm of the token rows finish_rows (as
  // final_tokens, the same bits) run in the last pass over the image rows,
  // each block attended while it is in cache: Output::finished.
  // after_block0 (when given) receives each prompt's state after block 0.
  std::vector<Output> forward(const std::vector<Tensor>& tokens, const TransformerImageInput& input,
                              const LowRankImage& image, const std::vector<int64_t>& finish_rows, int threads,
                              std::vector<LowRankBlock0>* after_block0 = nullptr) const;
  // The final attention and norm of the rows token_rows of each prompt's
  // tokens: [token_rows.size(), C] each. Tokens attend to the image
  // independently of each other, so a caller computes only the output tokens it
  // reads, when it reads them (the IoU token first, the mask tokens for the
  // masks it keeps); each row's result depends only on the same call's arguments.
  std::vector<Tensor> final_tokens(const std::vector<const Output*>& prompts, const std::vector<int64_t>& token_rows,
                                   const LowRankImage& image, int threads) const;

 private:
  // Copies of the transformer's weights (tensor handles share the storage).
  TwoWayAttentionBlock first_, second_;
  DecoderAttention final_attn_;
  DecoderLayerNorm final_norm_;
};

}  // namespace sam2rt
