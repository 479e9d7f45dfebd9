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
  // Of total(), what sam2rt's CPU encode does not compute: the qkv and output
  // projections of window padding tokens (a zero token's qkv is the bias; the
  // padding is cropped before the projection), and, where neck levels 0 and 1
  // are lateral convs alone, those convs and conv_s0 / conv_s1 less the composed
  // convs that replace them (FpnNeck::composed_with_lateral; levels not asked for).
  int64_t skipped = 0;
  int64_t executed() const { return total() - skipped; }
};

EncoderCost encoder_cost(const ModelConfig& config);

}  // namespace sam2rt
