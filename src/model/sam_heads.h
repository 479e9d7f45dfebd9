#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "backends/backend.h"
#include "core/tensor.h"
#include "core/weights.h"
#include "model/config.h"
#include "model/features.h"
#include "model/heads_image.h"
#include "model/mask_decoder.h"
#include "model/mask_postprocess.h"
#include "model/prompt.h"
#include "model/prompt_encoder.h"

namespace sam2rt {

// What SAM2ImagePredictor.predict(..., return_logits=True) returns for one prompt,
// plus the intermediates the goldens check.
struct MaskPrediction {
  Tensor masks;                        // [M, H_orig, W_orig] logits at the original size
  Tensor low_res_masks;                // [M, L, L] clamped to [-32, 32]
  std::vector<float> iou_predictions;  // M
  float object_score_logit = 0;
  Tensor sparse_embeddings;            // [1, N, C]
  Tensor dense_embeddings;             // [1, C, E, E]; one shared read-only tensor for all prompts without mask input;
                                     // empty for a mask input decoded on a device (computed there)
  Tensor all_low_res_logits;           // [1, T', L, L], the mask tokens decoded, before selection: all T, or
                                     // (a multimask prediction on the CPU) 1..T-1, the only ones it selects
  int all_low_res_first_token = 0;     // the token of all_low_res_logits' first map
  Tensor mask_tokens_out;              // [T', C]: the transformer's output rows of those mask tokens
  std::vector<float> all_iou;          // T
  std::vector<int> token_indices;      // the mask token behind each returned mask
  float stability_score_token0 = 0;   // single mask only
  bool single_mask_token_used = false;
};

// The prompt encoder and mask decoder of one model (sam_prompt_encoder.*, sam_mask_decoder.*).
//
// Two decoders compute sam_mask_decoder: the reference MaskDecoder, written
// once against the Backend, which decodes every prompt on a device and, on the
// CPU, the prompts with a mask input; and the CPU fast path
// LowRankMaskDecoder, for the prompts without one (docs/LOW_RANK.md).
// uses_low_rank() is the one place that chooses.
//
// Threading: a single prediction splits the image rows of its large steps among
// the caller's OpenMP threads; a batch gives whole prompts to the threads. Either
// way the token-sized steps run on one thread (kernels/decoder/threads.h).
class SamHeads {
 public:
  // The reference decoder runs on `backend` (a CpuBackend of its own when
  // null); with a device backend (one that records programs) every prompt is
  // decoded there.
  SamHeads(const ModelConfig& config, const WeightMap& weights, std::shared_ptr<Backend> backend = nullptr);
  ~SamHeads();

  bool decodes_on_device() const { return backend_->records(); }
  // The backend ops of the device decoder's last decode (none without one).
  ProgramStats device_decoder_ops() const;
  // Prompts the device decoder decodes in one program at most (0 without one).
  int64_t device_decoder_max_batch() const;

  // Whether `prompt` on `image` is decoded by the CPU fast path (else by the
  // reference decoder): the image has the fast path's state and the prompt no
  // mask input.
  static bool uses_low_rank(const HeadsImage& image, const Prompt& prompt);

  // get_dense_pe(), [1, C, E, E]; computed once at construction, handed out as a
  // copy so callers cannot alter the cached encoding.
  Tensor dense_pe() const { return dense_pe_.clone(); }

  // Checks the features' shapes (Error naming the mismatch) and precomputes what
  // every prompt on this image shares (the fast path's state). With a device
  // decoder the image goes to the device instead: `on_device` when given (the
  // encoder's outputs left there), else the features uploaded.
  HeadsImage prepare_image(const DecoderFeatures& features, DeviceDecoderFeatures on_device = {}) const;
  // With a device decoder (Error without), an image whose features are on the device only.
  HeadsImage prepare_image(DeviceDecoderFeatures on_device) const;

  // Validates the prompt (Error on bad input), then runs SAM2ImagePredictor.predict.
  // `fill` is applied to the low-res logits before the upsampling of `masks`
  // (low_res_masks stay unfilled, as in the official predictor).
  MaskPrediction predict(const HeadsImage& image, const Prompt& prompt, bool multimask, int orig_w,
                         int orig_h, const MaskFill& fill = {}) const;
  MaskPrediction predict(const DecoderFeatures& features, const Prompt& prompt, bool multimask, int orig_w,
                         int orig_h, const MaskFill& fill = {}) const;

  // Many prompts on one image; results are in input order and equal predict() one
  // by one. All prompts are validated before any work starts.
  std::vector<MaskPrediction> predict_batch(const HeadsImage& image, const std::vector<Prompt>& prompts,
                                            bool multimask, int orig_w, int orig_h, const MaskFill& fill = {}) const;
  std::vector<MaskPrediction> predict_batch(const DecoderFeatures& features, const std::vector<Prompt>& prompts,
                                            bool multimask, int orig_w, int orig_h, const MaskFill& fill = {}) const;

  // predict_batch without the upsampling to the original size, for callers that
  // upsample selectively: `masks` stays empty and low_res_masks holds the
  // selected logits unclamped (what the upsampling reads).
  // skip_masks_iou_at_most (multimask only, prompts without mask input): a
  // prompt none of whose selected masks has a predicted IoU above it skips the
  // upscaling, and its low_res_masks and all_low_res_logits stay empty (its IoU
  // predictions are set, its object_score_logit is 0): the segment-everything
  // IoU filter discards such masks unread.
  // SAM2Base._forward_sam_heads' decode of one prompt given as its sparse
  // tokens (PromptEncoder::embed_points, model frame) and an optional mask
  // input [1, L, L] (low-res logits): no prompt validation, no upsampling.
  // masks stays empty, low_res_masks holds the selected logits unclamped.
  // Error on a mask input of another shape.
  MaskPrediction predict_embedded(const HeadsImage& image, const Tensor& sparse, const Tensor& mask_input,
                                  bool multimask) const;

  std::vector<MaskPrediction> predict_batch_low_res(const HeadsImage& image,
                                                    const std::vector<Prompt>& prompts, bool multimask, int orig_w,
                                                    int orig_h,
                                                    std::optional<float> skip_masks_iou_at_most = std::nullopt) const;

 private:
  // Everything but the upscaling to the original size for `count` prompts of
  // one decoder path (uses_low_rank): by the fast path in lockstep, or by the
  // reference decoder in batches of one token count with mask inputs or without.
  // masks is left empty and the selected low-res logits (unclamped) are
  // returned in low_res_masks.
  std::vector<MaskPrediction> decode(const HeadsImage& image, const Prompt* prompts, size_t count,
                                     bool multimask, int orig_w, int orig_h, int threads,
                                     std::optional<float> skip_masks_iou_at_most = std::nullopt) const;
  // The dense embedding of a prompt: no_mask_dense_, its mask input's on the
  // CPU, empty for a mask input decoded on a device (computed there).
  Tensor dense_embeddings(const Prompt& prompt) const;
  // decode's decoding of prompts whose embeddings `results` holds (prompts: their mask inputs).
  std::vector<MaskPrediction> decode_embedded(const HeadsImage& image, const Prompt* prompts,
                                              std::vector<MaskPrediction> results, bool multimask, int threads,
                                              std::optional<float> skip_masks_iou_at_most = std::nullopt) const;
  // decode over a batch in groups shared by `threads` workers, `then` applied to
  // each prediction (when given) on the worker that made it.
  std::vector<MaskPrediction> decode_in_groups(const HeadsImage& image, const std::vector<Prompt>& prompts,
                                               bool multimask, int orig_w, int orig_h, int threads,
                                               std::optional<float> skip_masks_iou_at_most,
                                               const std::function<void(MaskPrediction&)>& then) const;

  // The reference decoder's part of decode: the outputs of `count` prompts
  // whose sparse embeddings `encoded` holds.
  // The reference decoder the calling thread uses: decoder_ on a device, and
  // on the CPU outside a parallel region; within one (decode_in_groups' threads
  // each decoding a prompt with a mask input), one of its own per OpenMP
  // thread, made on first use, since a decoder runs one decode at a time.
  const MaskDecoder& reference_decoder() const;
  std::vector<MaskDecoderOutput> decode_with_reference(const DeviceDecoderFeatures& features, const Prompt* prompts,
                                                       const std::vector<MaskPrediction>& encoded,
                                                       size_t count) const;
  // decode_in_groups for an image without the fast path: every prompt in the
  // reference decoder's batches.
  std::vector<MaskPrediction> decode_all_with_reference(const HeadsImage& image, const std::vector<Prompt>& prompts,
                                                        bool multimask, int orig_w, int orig_h, int threads,
                                                        std::optional<float> skip_masks_iou_at_most,
                                                        const std::function<void(MaskPrediction&)>& then) const;

  ModelConfig config_;
  PromptEncoder prompt_encoder_;
  Tensor dense_pe_;
  Tensor no_mask_dense_;
  std::shared_ptr<Backend> backend_;  // the reference decoder's: destroyed after the decoders
  std::shared_ptr<const MaskDecoder> decoder_;
  std::optional<LowRankMaskDecoder> low_rank_;  // without a device backend, where the form applies
  // reference_decoder()'s per-thread CPU decoders (index: OpenMP thread
  // number; 0 is decoder_), each on a CpuBackend of its own, and the prompt
  // encoder's and mask decoder's weights they are made from (tensor handles,
  // shared).
  WeightMap weights_;
  mutable std::mutex thread_decoders_mutex_;
  mutable std::vector<std::shared_ptr<const MaskDecoder>> thread_decoders_;
};

}  // namespace sam2rt
