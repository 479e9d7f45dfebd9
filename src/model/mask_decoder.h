#pragma once

#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "backends/backend.h"
#include "core/tensor.h"
#include "core/weights.h"
#include "model/config.h"
#include "model/device_mask_downscaling.h"
#include "model/features.h"
#include "model/mask_decoder_output.h"

namespace sam2rt {

// Host features (NCHW, as the encoder downloads them) made channels-last tensors
// of `backend` (holding its run_mutex()), persistent ones: a device backend's
// programs use its free activation memory as scratch, which would overwrite
// features kept there between prompts. Three uploads.
DeviceDecoderFeatures upload_decoder_features(Backend& backend, const DecoderFeatures& features);

// sam_mask_decoder.* of SAM 2.1 (what MaskDecoder computes) written once against a
// Backend, in the official model's own order of operations: the two-way
// transformer (q/k/v projections, attention, out projections, post-norms), the
// upscaling with the high-resolution features, the hypernetwork MLPs and the
// IoU and object-score heads. It is the decoder of every backend and every
// prompt kind; the CPU's fast path for prompts without a mask input
// (LowRankMaskDecoder) is checked against it.
// A prompt with a mask input has its dense embedding computed here too (the
// prompt encoder's mask downscaling, DeviceMaskDownscaling), which its program
// adds to image_embed in place of the no-mask embedding.
// On a device backend prompts decode in batches (predict_masks_batch; a
// prompt alone is a batch of one): a program per (token count, mask input or
// not, batch size), recorded on its first batch and replayed. A batch is one
// upload (its prompts' tokens, a few hundred floats each, and their mask
// inputs), one submission and one download (every prompt's low-res logits,
// IoUs, object score and mask tokens' outputs, packed into one tensor). The
// token-side ops run over the batch's rows, the attentions and the image-side
// maps with a batch index (Backend's batched ops). Thread-safe: a decode holds
// the backend's run_mutex().
class MaskDecoder {
 public:
  // image_pe: get_dense_pe() [1, C, E, E]; no_mask_dense: the dense embedding of
  // a prompt without mask input, [1, C, E, E]. Weights are made resident here.
  MaskDecoder(const ModelConfig& config, const WeightMap& weights, const Tensor& image_pe,
              const Tensor& no_mask_dense, std::shared_ptr<Backend> backend);
  ~MaskDecoder();

  int num_mask_tokens() const { return num_mask_tokens_; }
  Backend& backend() const { return *backend_; }

  // sparse [1, N, C] (N may be 0) and, for a prompt with a mask input, that
  // mask ([1, L, L], the low-res logits of an earlier prediction; empty: none),
  // on the image of `features`: every mask token's low-res logits, IoU and the
  // object score, as MaskDecoder::predict_masks on the prompt encoder's dense
  // embedding. The features are copied into the decoder's own tensors when they
  // are not those of the previous call (which it keeps, so their storage is not
  // reused meanwhile): prompts on one image copy them once. Error naming a
  // feature or a mask input of the wrong shape.
  MaskDecoderOutput predict_masks(const DeviceDecoderFeatures& features, const Tensor& sparse,
                                  const Tensor& mask_input = {}) const;

  // predict_masks of each of `sparse` (each [1, N, C] of one N) with its mask
  // input, mask_inputs[i] (empty: no prompt has one), in order, decoded in
  // batches of at most max_prompts_per_batch() prompts (near-equal sizes, so
  // that a split batch replays few programs). Each result is that prompt's
  // predict_masks, bit for bit where the backend's ops compute each row as they
  // do for one prompt (the Vulkan backend's; the CPU's GEMMs may block rows
  // differently). Error when the token counts differ, or when mask_inputs is
  // neither empty nor one non-empty mask per prompt.
  std::vector<MaskDecoderOutput> predict_masks_batch(const DeviceDecoderFeatures& features,
                                                     const std::vector<Tensor>& sparse,
                                                     const std::vector<Tensor>& mask_inputs = {}) const;

  // The two-way transformer's intermediates of one prompt: the tokens [T, C]
  // and the image rows [E*E, C] after each block, the tokens after the final
  // attention and norm. What the low-rank decoder's stage-by-stage test
  // compares with.
  struct TransformerTrace {
    std::vector<Tensor> queries_after_block;
    std::vector<Tensor> keys_after_block;
    Tensor final_queries;
  };
  // predict_masks of a prompt without mask input, filling `trace`. Error on a
  // backend that records programs (its tensors exist only when a program runs).
  MaskDecoderOutput predict_masks_traced(const DeviceDecoderFeatures& features, const Tensor& sparse,
                                         TransformerTrace& trace) const;

  // Prompts one program decodes at most: kMaxPromptsPerBatch, fewer where a
  // batch's image-side tensors would exceed what the backend's ops take whole
  // or the activations of kBatchMemoryBytes (at least 1).
  int64_t max_prompts_per_batch() const;
  static constexpr int64_t kMaxPromptsPerBatch = 64;
  static constexpr int64_t kBatchMemoryBytes = int64_t{1} << 30;

  // The backend ops of the last decode (a device's recorded program's).
  ProgramStats last_ops() const;

 private:
  struct Attention;
  struct Block;
  struct Mlp;
  // One decode's tensors, of B prompts of T tokens: what a run uploads, their
  // input tokens [B * T, C] and, with mask inputs, theirs [1, 1, B * L, L]
  // (empty without), and their outputs packed into one tensor, so that a batch
  // is one download: per prompt the masks [M, L * L], the IoUs [M], the
  // object score and the mask tokens' output rows [M, C], in that order.
  // Without mask inputs the uploaded tensor is the tokens; with them it holds
  // per prompt its tokens, then its mask input (one upload), which the
  // program copies apart.
  struct Decode {
    int64_t prompts = 1;
    DeviceTensor inputs;
    DeviceTensor tokens;
    DeviceTensor mask_inputs;
    DeviceTensor outputs;  // [B * (M * L * L + M + 1 + M * C)]
    std::shared_ptr<Program> program;
  };
  // Its key among the recorded programs: (token count, mask inputs, prompts).
  using DecodeKey = std::tuple<int64_t, bool, int64_t>;
  // The fixed tokens and the sparse prompt embeddings of one prompt, [T, C].
  Tensor tokens(const Tensor& sparse) const;
  // Copies `features` into image_embed_, src_, feat_s1_ and feat_s0_ unless they are already there.
  void set_image(const DeviceDecoderFeatures& features) const;
  // The decode of `prompts` prompts of `tokens_per_prompt` tokens, with mask
  // inputs or not, on `features`, recorded or run, from `inputs` (as
  // Decode::inputs): their outputs, packed as Decode::outputs.
  // With `trace` (a backend that runs ops when called), its intermediates too.
  Tensor decode(const DeviceDecoderFeatures& features, const Tensor& inputs, int64_t prompts,
                int64_t tokens_per_prompt, bool with_mask_inputs, TransformerTrace* trace = nullptr) const;
  // The decode of `decode.inputs` into its outputs, as backend ops; `trace`
  // as decode's.
  void forward(Decode& decode, TransformerTrace* trace) const;
  // Values of one prompt's packed outputs.
  int64_t output_size() const;
  MaskDecoderOutput unpack(const Tensor& outputs, int64_t prompt) const;

  ModelConfig config_;
  int num_mask_tokens_;
  std::shared_ptr<Backend> backend_;  // declared first: destroyed after everything resident on it
  Tensor fixed_tokens_;               // [2 + M, C]: obj_score_token, iou_token, mask_tokens
  DeviceTensor image_pe_;             // [E*E, C]
  DeviceTensor no_mask_dense_;        // [E*E, C]
  std::unique_ptr<DeviceMaskDownscaling> mask_downscaling_;
  std::vector<Block> blocks_;
  std::unique_ptr<Attention> final_attention_;
  DeviceTensor final_norm_weight_, final_norm_bias_;
  DeviceTensor upscale0_weight_, upscale0_bias_, upscale_norm_weight_, upscale_norm_bias_, upscale3_weight_,
      upscale3_bias_;
  std::vector<Mlp> hypernetworks_;
  std::unique_ptr<Mlp> iou_head_, object_score_head_;
  // The image: image_embed [E*E, C] (which a mask input's dense embedding is
  // added to), src = image_embed + no_mask_dense, and the high-resolution
  // features, made from image_ (the features of the last call); persistent,
  // as they live across other programs' runs.
  mutable DeviceTensor image_embed_, src_, feat_s1_, feat_s0_;
  mutable DeviceDecoderFeatures image_;
  mutable std::map<DecodeKey, Decode> decodes_;  // device backends
  mutable ProgramStats last_ops_;
};

}  // namespace sam2rt
