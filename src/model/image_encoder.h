#pragma once

#include <memory>
#include <vector>

#include "backends/backend.h"
#include "backends/op_types.h"
#include "core/tensor.h"
#include "core/weights.h"
#include "model/config.h"
#include "model/features.h"
#include "model/fpn_neck.h"
#include "model/hiera.h"

namespace sam2rt {

// Everything the image encoder computes, all NCHW with batch 1.
struct EncoderOutputs {
  Tensor patch_embed_pos;            // [1, C0, S/4, S/4]: input of trunk.blocks[0]; only when requested
  std::vector<Tensor> trunk_stages;  // 4 x Hiera.forward outputs, highest resolution first; only when requested
  // The NCHW outputs below are empty when they stayed on the device
  // (EncodeOptions::download_outputs): decoder_on_device holds the decoder's then.
  std::vector<Tensor> neck_levels;   // 3 x FPN levels after scalp, level 0 = highest resolution (see EncodeOptions)
  std::vector<Tensor> neck_pos;      // 3 x sine position encodings, only when requested
  DecoderFeatures decoder;           // image_embed, feat_s1, feat_s0 (see features.h)
  // The same left on a device backend, when asked (EncodeOptions): this encode's
  // own persistent tensors, which later encodes do not overwrite.
  DeviceDecoderFeatures decoder_on_device;
  // The backend ops one such encode runs (on a device backend: its recorded
  // program's; on the CPU: counted during this call, exact when no other
  // encode on the same encoder overlaps it).
  ProgramStats ops;
  // Device backends: milliseconds of this encode's image upload, program run and
  // output download (zero on the CPU, and for outputs left on the device).
  double upload_ms = 0.0, device_ms = 0.0, download_ms = 0.0;
};

struct EncodeOptions {
  // Device backends: also leave the decoder's features on the device
  // (EncoderOutputs::decoder_on_device), for a mask decoder there. The NCHW
  // outputs (neck levels, decoder features) then stay on the device unless
  // download_outputs asks for them: the encode uploads the image and downloads
  // nothing (ImageEncoder::download_decoder_features fetches the decoder's
  // later, when something asks).
  bool decoder_features_on_device = false;
  // With decoder_features_on_device: download the NCHW outputs all the same.
  // Without it they are always downloaded (nothing else would hold them); so
  // are they when position_encodings or trunk_outputs ask for host tensors.
  bool download_outputs = false;
  // The FPN levels after scalp, NCHW (goldens, feature files with every feature;
  // also made for position_encodings). The image predictor reads only the
  // decoder's features; left out, the CPU skips their NCHW copies (84 MB for a
  // 1024-pixel image). Device backends download them whenever they download.
  bool neck_levels = false;
  // With neck_levels: the coarsest level alone (what the video tracker attends
  // from). The finer levels are not made, nor downloaded from a device; they
  // stay empty tensors in EncoderOutputs::neck_levels. Ignored with
  // position_encodings or trunk_outputs, which get every level.
  bool coarsest_neck_level_only = false;
  bool position_encodings = false;  // the neck's vision_pos_enc (unused by the image predictor)
  bool trunk_outputs = false;       // patch_embed_pos and trunk_stages (goldens, debugging)
  // Arithmetic of the trunk's GEMMs. bf16 rounds weights and GEMM inputs to
  // bfloat16 (float32 accumulation, float32 attention and residual stream): about
  // twice as fast, not exact. The neck and the decoder projections stay float32.
  Precision precision = Precision::fp32;
};

// SAM 2.1 image encoder (Hiera trunk + FPN neck) followed by what
// SAM2ImagePredictor.set_image derives from it: conv_s0/conv_s1 of the mask
// decoder on levels 0/1 and no_mem_embed added to level 2.
class ImageEncoder {
 public:
  // Checks the weights against the config (throws Error naming the first bad
  // key) and keeps shared handles to the ones it needs: cheap, nothing is
  // copied. GEMM primitives are made on first use (the bf16 weights converted
  // on the first bf16 encode), so the first encode is slower than the rest.
  // On the CPU backend.
  ImageEncoder(const ModelConfig& config, const WeightMap& weights);
  // On `backend`: a device backend gets the weights uploaded here, records the
  // encode on its first call (per set of outputs asked for) and replays it after.
  ImageEncoder(const ModelConfig& config, const WeightMap& weights, std::shared_ptr<Backend> backend);

  // image: preprocessed [1, 3, S, S] with S = config.image_size. Thread-safe
  // (a device backend runs one encode at a time). Scratch memory is recycled
  // between calls, so repeated encodes allocate nothing new; the outputs are
  // the caller's to keep. bf16 precision: CPU only.
  EncoderOutputs encode(const Tensor& image, const EncodeOptions& options = {}) const;

  // The host copy, NCHW, of decoder features an encode left on the device
  // (EncoderOutputs::decoder_on_device): three downloads, converted from
  // channels-last on the host, bit for bit what the encode would have
  // downloaded. Thread-safe.
  DecoderFeatures download_decoder_features(const DeviceDecoderFeatures& features) const;

  const Backend& backend() const { return *backend_; }

  // conv_s0 or conv_s1 of the mask decoder: from the trunk stage (composed
  // with the neck's lateral conv, FpnNeck::composed_with_lateral) or on the
  // neck's level.
  struct HighResConv {
    LinearHandle conv;
    bool from_stage = false;
  };

 private:
  struct Bf16Trunk;
  struct DeviceOutputs;
  struct Programs;
  const HieraTrunk& trunk(Precision precision) const;
  // Which neck levels an encode hands out (EncodeOptions::neck_levels and
  // coarsest_neck_level_only).
  enum class NeckLevels { none, coarsest, all };
  static NeckLevels neck_levels_asked(const EncodeOptions& options);
  // The whole encode as backend ops on `image`; the NCHW copies of the outputs
  // only when `nchw_outputs` (a device converts them only for a download), of
  // the neck's levels `levels` among them.
  DeviceOutputs forward(const DeviceTensor& image, const HieraTrunk& trunk, bool trunk_outputs, bool nchw_outputs,
                        NeckLevels levels) const;
  EncoderOutputs replay(const Tensor& image, const EncodeOptions& options) const;
  EncoderOutputs download(const DeviceOutputs& device) const;

  ModelConfig config_;
  WeightMap weights_;  // shared handles, for building the bf16 trunk when first asked
  std::shared_ptr<Backend> backend_;  // declared first: destroyed after everything resident on it
  HieraTrunk trunk_;
  std::shared_ptr<Bf16Trunk> bf16_trunk_;
  FpnNeck neck_;
  HighResConv conv_s0_, conv_s1_;
  DeviceTensor no_mem_embed_;  // [d_model]
  std::shared_ptr<Programs> programs_;  // device backends: the recorded encodes
};

}  // namespace sam2rt
