#pragma once

#include <cstdint>

#include "model/config.h"

namespace sam2rt {

// Multiply-accumulates of one image-encoder forward pass as the official code
// defines it (window padding included, attention QK^T and AV counted, neck and
// decoder-ready projections included). Bench reports achieved GFLOP/s as
// 2 * MACs / time against this count.
struct EncoderCost {
  int64_t patch_embed = 0;
  int64_t linear = 0;     // qkv, proj, MLP and q-pool residual projections
  int64_t attention = 0;  // QK^T and softmax(.)V
  int64_t neck = 0;       // lateral 1x1 convs and conv_s0 / conv_s1
  int64_t total() const { return patch_embed + linear + attention + neck; }
};

EncoderCost encoder_cost(const ModelConfig& config);

}  // namespace sam2rt
