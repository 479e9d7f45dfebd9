#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backends/backend.h"
#include "core/tensor.h"
#include "core/weights.h"
#include "model/config.h"
#include "model/features.h"
#include "model/mask_decoder.h"

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
// IoU and object-score heads. MaskDecoder's CPU shortcuts (the low-rank form,
// attention folded into the weights) are not used: they pay on a CPU only.
// On a device backend a prompt's decode is one program, recorded on the first
// prompt of each token count and replayed: the prompt uploads its tokens
// (a few hundred floats) and downloads the low-res logits, IoUs and object
// score, packed into one tensor (one upload and one download per prompt). A
// prompt with a mask input uploads its dense embedding too (the prompt
// encoder's mask downscaling, computed on the CPU), which its program adds to
// image_embed in place of the no-mask embedding: a program per (token count,
// mask input or not). Thread-safe: a decode holds the backend's run_mutex().
class DeviceMaskDecoder {
 public:
  // image_pe: get_dense_pe() [1, C, E, E]; no_mask_dense: the dense embedding of
  // a prompt without mask input, [1, C, E, E]. Weights are made resident here.
  DeviceMaskDecoder(const ModelConfig& config, const WeightMap& weights, const Tensor& image_pe,
                    const Tensor& no_mask_dense, std::shared_ptr<Backend> backend);
  ~DeviceMaskDecoder();

  int num_mask_tokens() const { return num_mask_tokens_; }
  Backend& backend() const { return *backend_; }

  // sparse [1, N, C] (N may be 0) and, for a prompt with a mask input, its
  // dense embedding [1, C, E, E] (empty: the no-mask one), on the image of
  // `features`: every mask token's low-res logits, IoU and the object score,
  // as MaskDecoder::predict_masks. The features
  // are copied into the decoder's own tensors when they are not those of the
  // previous call (which it keeps, so their storage is not reused meanwhile):
  // prompts on one image copy them once. Error naming a feature of the wrong shape.
  MaskDecoderOutput predict_masks(const DeviceDecoderFeatures& features, const Tensor& sparse,
                                  const Tensor& mask_dense = {}) const;

  // The backend ops of the last predict_masks (a device's recorded program's).
  ProgramStats last_ops() const;

 private:
  struct Attention;
  struct Block;
  struct Mlp;
  // One decode's tensors: its input tokens [T, C], the dense embedding of a
  // mask input [E*E, C] (empty without), and its outputs packed into one
  // tensor, so that a prompt is one download: the masks [M, L * L], the IoUs
  // [M] and the object score, in that order.
  struct Decode {
    DeviceTensor tokens;
    DeviceTensor mask_dense;
    DeviceTensor outputs;  // [M * L * L + M + 1]
    std::shared_ptr<Program> program;
  };
  Tensor tokens(const Tensor& sparse) const;
  // Copies `features` into image_embed_, src_, feat_s1_ and feat_s0_ unless they are already there.
  void set_image(const DeviceDecoderFeatures& features) const;
  // The decode of `decode.tokens` into its outputs, as backend ops.
  void forward(Decode& decode) const;

  ModelConfig config_;
  int num_mask_tokens_;
  std::shared_ptr<Backend> backend_;  // declared first: destroyed after everything resident on it
  Tensor fixed_tokens_;               // [2 + M, C]: obj_score_token, iou_token, mask_tokens
  DeviceTensor image_pe_;             // [E*E, C]
  DeviceTensor no_mask_dense_;        // [E*E, C]
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
  mutable std::map<std::pair<int64_t, bool>, Decode> decodes_;  // by (token count, mask input) (device backends)
  mutable ProgramStats last_ops_;
};

}  // namespace sam2rt
