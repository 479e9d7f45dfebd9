#pragma once

#include <vector>

#include "core/tensor.h"
#include "core/weights.h"
#include "model/config.h"
#include "model/prompt.h"

namespace sam2rt {

// SAM 2.1's PromptEncoder (sam_prompt_encoder.*) driven the way
// SAM2ImagePredictor._prep_prompts/_predict drive it: a box becomes two corner
// points with labels 2 and 3 placed before the user's points, and since the
// encoder is then always called with boxes=None, a padding point (label -1,
// not_a_point_embed) is always appended.
class PromptEncoder {
 public:
  PromptEncoder(const ModelConfig& config, const WeightMap& weights);

  // get_dense_pe(): the random-Fourier position encoding of the E x E grid, [1, C, E, E].
  Tensor dense_pe() const;

  // Sparse tokens [1, N, C], N = 2 (box) + points + 1 (padding); N = 0 for a mask-only prompt.
  Tensor embed_sparse(const Prompt& prompt, int orig_w, int orig_h) const;

  // A point as sam_prompt_encoder takes it: model-frame coordinates (pixels of
  // the image_size x image_size input) and its label: -1 padding, 0 negative,
  // 1 positive, 2/3 box corners.
  struct ModelPoint {
    float x = 0, y = 0;
    int label = -1;
  };
  // PromptEncoder._embed_points(points, labels, pad=True): [1, N + 1, C], the
  // padding point appended (the video predictor's prompts, given in the model
  // frame already; embed_sparse's after their transform). Error on another label.
  Tensor embed_points(const std::vector<ModelPoint>& points) const;

  // Dense embedding [1, C, E, E]: mask_downscaling(mask_input), or no_mask_embed broadcast.
  Tensor embed_dense(const Prompt& prompt) const;

  // Number of sparse tokens embed_sparse gives for this prompt.
  static int sparse_token_count(const Prompt& prompt);

 private:
  // PositionEmbeddingRandom._pe_encoding of one point in [0, 1]^2, written to out[0, C).
  void encode_position(float x01, float y01, float* out) const;

  ModelConfig config_;
  Tensor gaussian_matrix_;  // [2, C/2]
  Tensor point_embeddings_[4];
  Tensor not_a_point_embed_;
  Tensor no_mask_embed_;
  Tensor down0_w_, down0_b_, norm1_w_, norm1_b_, down3_w_, down3_b_, norm4_w_, norm4_b_, down6_w_, down6_b_;
};

}  // namespace sam2rt
