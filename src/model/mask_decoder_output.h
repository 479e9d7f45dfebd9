#pragma once

#include <cstdint>
#include <functional>

#include "core/tensor.h"

namespace sam2rt {

// MaskDecoder.predict_masks for one prompt: the low-res logits of the mask
// tokens asked for (MaskTokens) and every mask token's IoU, before any selection.
struct MaskDecoderOutput {
  Tensor masks;                    // [T - first_mask_token, L, L], T = num_multimask_outputs + 1 mask tokens
  int64_t first_mask_token = 0;    // the token of masks' first row
  Tensor iou;                      // [T] (sigmoid applied)
  float object_score_logit = 0;    // with the masks: 0 where the IoU filter skipped them
  Tensor mask_tokens_out;          // [T - first_mask_token, C]: the transformer's output rows of the
                                   // mask tokens of masks (SAM2Base makes its object pointer of one)
};

// The mask tokens whose logits a prediction computes: all of them, or only
// tokens 1..T-1, all a multimask prediction selects (MaskDecoder.forward's
// masks[:, 1:]); token 0's final attention, hypernetwork and mask products are
// then skipped.
enum class MaskTokens { kAll, kMultimaskOnly };

// Asked with the prompt's IoU predictions [T] before the upscaling: false when
// none of its masks will be read, and the mask tokens, the object score and the
// upscaling are skipped (masks stays empty).
using MasksWanted = std::function<bool(const Tensor& iou)>;

}  // namespace sam2rt
