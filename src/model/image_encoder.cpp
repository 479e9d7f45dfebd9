#include "model/image_encoder.h"

#include <chrono>
#include <mutex>
#include <string>

#include "backends/cpu_backend.h"
#include "core/error.h"
#include "kernels/layout.h"
#include "kernels/stage_profile.h"
#include "model/position_encoding.h"
#include "model/weight_manifest.h"

namespace sam2rt {

namespace {

const ModelConfig& checked(const ModelConfig& config, const WeightMap& weights) {
  validate_config(config);
  if (!config.use_high_res_features_in_sam) {
    throw Error("image encoder: configs without use_high_res_features_in_sam are not supported");
  }
  validate_weights(weights, config);
  return config;
}

// A 1x1 conv's weight as [out, in].
Tensor conv1x1_weight(const WeightMap& weights, const std::string& prefix) {
  const Tensor& weight = weights.at(prefix + ".weight");
  if (weight.rank() != 4 || weight.dim(2) != 1 || weight.dim(3) != 1) {
    throw Error("image encoder: '" + prefix + ".weight' " + shape_to_string(weight.shape()) + " is not a 1x1 kernel");
  }
  return weight.reshaped({weight.dim(0), weight.dim(1)});
}

// The mask decoder's 1x1 conv `prefix` (conv_s0 or conv_s1) on neck level
// `level`: composed with the level's lateral conv, from the trunk stage, where
// the level is that conv alone (every SAM 2.1 config); else on the level.
ImageEncoder::HighResConv high_res_conv(Backend& backend, const FpnNeck& neck, const WeightMap& weights,
                                        const std::string& prefix, int level) {
  const Tensor weight = conv1x1_weight(weights, prefix);
  const Tensor& bias = weights.at(prefix + ".bias");
  if (neck.lateral_only(level)) return {neck.composed_with_lateral(level, weight, bias), true};
  return {backend.linear(weight, bias, Precision::fp32), false};
}

std::shared_ptr<Backend> checked_backend(std::shared_ptr<Backend> backend) {
  if (backend == nullptr) throw Error("image encoder: no backend");
  return backend;
}

// Whether an encode hands back its outputs as host tensors (EncodeOptions).
bool outputs_on_host(const EncodeOptions& options) {
  return !options.decoder_features_on_device || options.download_outputs || options.position_encodings ||
         options.trunk_outputs;
}

}  // namespace

struct ImageEncoder::Bf16Trunk {
  std::once_flag built;
  std::unique_ptr<HieraTrunk> trunk;
};

// What forward() leaves on the backend: NCHW, and the decoder's features also
// channels-last (the layout a mask decoder on the backend reads).
struct ImageEncoder::DeviceOutputs {
  DeviceTensor patch_embed_pos;
  std::vector<DeviceTensor> trunk_stages, neck_levels;
  DeviceTensor image_embed, feat_s1, feat_s0;
  DeviceDecoderFeatures decoder_hwc;
};

// A device backend's recorded encodes: the outputs left channels-last on the
// device only, with their NCHW copies for a download, and with the trunk
// outputs too. Each program reads `input` and writes `outputs`. Guarded by the
// backend's run_mutex(), which the mask decoder on the same backend holds too.
struct ImageEncoder::Programs {
  struct Recorded {
    DeviceTensor input;
    DeviceOutputs outputs;
    std::shared_ptr<Program> program;
  };
  Recorded channels_last, nchw, nchw_coarsest_level, nchw_and_trunk;
};

ImageEncoder::ImageEncoder(const ModelConfig& config, const WeightMap& weights)
    : ImageEncoder(config, weights, std::make_shared<CpuBackend>()) {}

ImageEncoder::ImageEncoder(const ModelConfig& config, const WeightMap& weights, std::shared_ptr<Backend> backend)
    : config_(checked(config, weights)),
      weights_(weights),
      backend_(checked_backend(std::move(backend))),
      trunk_(config, weights, Precision::fp32, *backend_),
      bf16_trunk_(std::make_shared<Bf16Trunk>()),
      neck_(config.neck, weights, *backend_),
      conv_s0_(high_res_conv(*backend_, neck_, weights, "sam_mask_decoder.conv_s0", 0)),
      conv_s1_(high_res_conv(*backend_, neck_, weights, "sam_mask_decoder.conv_s1", 1)),
      no_mem_embed_(backend_->constant(weights.at("no_mem_embed").reshaped({config.embed_dim()}))),
      programs_(std::make_shared<Programs>()) {}

const HieraTrunk& ImageEncoder::trunk(Precision precision) const {
  if (precision == Precision::fp32) return trunk_;
  if (backend_->records()) {
    throw Error("image encoder: --precision bf16 runs on the CPU only (" + backend_->description() +
                " computes in fp32)");
  }
  std::call_once(bf16_trunk_->built, [this] {
    bf16_trunk_->trunk = std::make_unique<HieraTrunk>(config_, weights_, Precision::bf16, *backend_);
  });
  return *bf16_trunk_->trunk;
}

ImageEncoder::NeckLevels ImageEncoder::neck_levels_asked(const EncodeOptions& options) {
  if (options.position_encodings || options.trunk_outputs) return NeckLevels::all;
  if (!options.neck_levels) return NeckLevels::none;
  return options.coarsest_neck_level_only ? NeckLevels::coarsest : NeckLevels::all;
}

ImageEncoder::DeviceOutputs ImageEncoder::forward(const DeviceTensor& image, const HieraTrunk& trunk,
                                                  bool trunk_outputs, bool nchw_outputs,
                                                  NeckLevels levels_out) const {
  Backend& backend = *backend_;
  auto to_nchw = [&backend](const DeviceTensor& hwc) {
    ScopedStage stage("to NCHW");
    DeviceTensor nchw = backend.tensor({1, hwc.dim(2), hwc.dim(0), hwc.dim(1)});
    backend.hwc_to_nchw(hwc, nchw);
    return nchw;
  };

  DeviceOutputs out;
  DeviceTensor embedded;
  {
    ScopedStage stage("patch embed");
    embedded = trunk.embed(image);
  }
  if (trunk_outputs) out.patch_embed_pos = to_nchw(embedded);
  std::vector<DeviceTensor> stages = trunk.forward_blocks(std::move(embedded));
  if (trunk_outputs) {
    for (const DeviceTensor& stage : stages) out.trunk_stages.push_back(to_nchw(stage));
  }

  auto project = [&](const LinearHandle& conv, const DeviceTensor& map) {
    ScopedStage stage("decoder features");
    DeviceTensor hwc = backend.tensor({map.dim(0), map.dim(1), conv.out_features});
    backend.linear_forward(conv, map, map.dim(0) * map.dim(1), hwc, Epilogue::none);
    return hwc;
  };
  // feat_s0 and feat_s1 straight from the trunk stages where their convs are
  // composed with the neck's (high_res_conv): levels 0 and 1 (64 and 16 MB for
  // SAM 2 at 1024) are then made only when asked for.
  const bool all_levels = nchw_outputs && levels_out == NeckLevels::all;
  if (conv_s0_.from_stage) out.decoder_hwc.feat_s0 = project(conv_s0_.conv, stages[0]);
  if (conv_s1_.from_stage) out.decoder_hwc.feat_s1 = project(conv_s1_.conv, stages[1]);
  const int first_level = all_levels || !conv_s0_.from_stage ? 0 : !conv_s1_.from_stage ? 1 : 2;
  std::vector<DeviceTensor> levels = neck_.forward(std::move(stages), first_level);
  levels.resize(levels.size() - static_cast<size_t>(config_.neck.scalp));  // drop the lowest resolution
  if (all_levels) {
    for (const DeviceTensor& level : levels) out.neck_levels.push_back(to_nchw(level));
  } else if (nchw_outputs && levels_out == NeckLevels::coarsest) {
    out.neck_levels.resize(levels.size());
    out.neck_levels.back() = to_nchw(levels.back());
  }
  if (!conv_s0_.from_stage) out.decoder_hwc.feat_s0 = project(conv_s0_.conv, levels[0]);
  levels[0] = DeviceTensor();
  if (!conv_s1_.from_stage) out.decoder_hwc.feat_s1 = project(conv_s1_.conv, levels[1]);

  ScopedStage stage("decoder features");
  DeviceTensor image_embed = backend.tensor(levels[2].shape());
  backend.copy(levels[2], image_embed);
  backend.add_channel_vector(image_embed, no_mem_embed_);
  out.decoder_hwc.image_embed = image_embed;
  if (nchw_outputs) {
    out.image_embed = to_nchw(out.decoder_hwc.image_embed);
    out.feat_s1 = to_nchw(out.decoder_hwc.feat_s1);
    out.feat_s0 = to_nchw(out.decoder_hwc.feat_s0);
  }
  return out;
}

EncoderOutputs ImageEncoder::encode(const Tensor& image, const EncodeOptions& options) const {
  const int64_t size = config_.image_size;
  if (image.shape() != Shape{1, 3, size, size}) {
    throw Error("image encoder: input is " + shape_to_string(image.shape()) + ", expected [1, 3, " +
                std::to_string(size) + ", " + std::to_string(size) + "] (preprocess the image to the model's " +
                "image_size first)");
  }
  const HieraTrunk& trunk = this->trunk(options.precision);
  EncoderOutputs out;
  if (backend_->records()) {
    out = replay(image, options);
  } else {
    const int64_t ops_before = backend_->ops_called();
    out = download(forward(backend_->input(image), trunk, options.trunk_outputs, true, neck_levels_asked(options)));
    out.ops.ops = backend_->ops_called() - ops_before;
  }
  if (options.position_encodings) {
    for (const Tensor& level : out.neck_levels) {
      out.neck_pos.push_back(sine_position_encoding(config_.neck.pos_num_pos_feats, level.dim(2), level.dim(3),
                                                    config_.neck.pos_temperature, config_.neck.pos_normalize));
    }
  }
  return out;
}

EncoderOutputs ImageEncoder::replay(const Tensor& image, const EncodeOptions& options) const {
  Backend& backend = *backend_;
  const bool trunk_outputs = options.trunk_outputs, on_host = outputs_on_host(options);
  std::lock_guard lock(backend.run_mutex());
  // Host outputs come with every neck level, or with the coarsest alone when
  // that is all that is asked for.
  const bool coarsest_only = neck_levels_asked(options) == NeckLevels::coarsest;
  Programs::Recorded& recorded = trunk_outputs   ? programs_->nchw_and_trunk
                                 : !on_host      ? programs_->channels_last
                                 : coarsest_only ? programs_->nchw_coarsest_level
                                                 : programs_->nchw;
  if (recorded.program == nullptr) {
    ScopedStage stage("record");
    backend.begin_program();
    try {
      recorded.input = backend.tensor(image.shape());
      recorded.outputs =
          forward(recorded.input, trunk_, trunk_outputs, on_host, coarsest_only ? NeckLevels::coarsest : NeckLevels::all);
    } catch (...) {
      // Drop the partial recording: the next encode records afresh.
      backend.end_program();
      recorded = {};
      throw;
    }
    recorded.program = backend.end_program();
  }
  using Clock = std::chrono::steady_clock;
  auto ms_between = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  const Clock::time_point start = Clock::now();
  {
    ScopedStage stage("upload");
    backend.write(recorded.input, image);
  }
  const Clock::time_point uploaded = Clock::now();
  {
    ScopedStage stage("encode on device");
    backend.run(*recorded.program);
  }
  const Clock::time_point ran = Clock::now();
  EncoderOutputs out;
  if (on_host) {
    ScopedStage stage("download");
    out = download(recorded.outputs);
    out.download_ms = ms_between(ran, Clock::now());
  }
  out.ops = recorded.program->stats();
  out.upload_ms = ms_between(start, uploaded);
  out.device_ms = ms_between(uploaded, ran);
  if (options.decoder_features_on_device) {
    // Copied out of the program's outputs, which the next encode overwrites.
    const DeviceDecoderFeatures& source = recorded.outputs.decoder_hwc;
    DeviceDecoderFeatures kept{backend.persistent(source.image_embed.shape()),
                               backend.persistent(source.feat_s1.shape()), backend.persistent(source.feat_s0.shape())};
    ScopedStage stage("keep decoder features");
    run_once(backend, [&] {
      backend.copy(source.image_embed, kept.image_embed);
      backend.copy(source.feat_s1, kept.feat_s1);
      backend.copy(source.feat_s0, kept.feat_s0);
    });
    out.decoder_on_device = std::move(kept);
  }
  return out;
}

DecoderFeatures ImageEncoder::download_decoder_features(const DeviceDecoderFeatures& features) const {
  if (features.image_embed.empty() || features.feat_s1.empty() || features.feat_s0.empty()) {
    throw Error("image encoder: no decoder features on the device to download");
  }
  Backend& backend = *backend_;
  ScopedStage stage("download decoder features");
  std::lock_guard lock(backend.run_mutex());
  // The device's hwc_to_nchw is a copy, so converting on the host gives the same bits.
  return {hwc_to_nchw(backend.download(features.image_embed)), hwc_to_nchw(backend.download(features.feat_s1)),
          hwc_to_nchw(backend.download(features.feat_s0))};
}

EncoderOutputs ImageEncoder::download(const DeviceOutputs& device) const {
  Backend& backend = *backend_;
  EncoderOutputs out;
  if (!device.patch_embed_pos.empty()) out.patch_embed_pos = backend.download(device.patch_embed_pos);
  for (const DeviceTensor& stage : device.trunk_stages) out.trunk_stages.push_back(backend.download(stage));
  for (const DeviceTensor& level : device.neck_levels) {
    out.neck_levels.push_back(level.empty() ? Tensor() : backend.download(level));
  }
  out.decoder.image_embed = backend.download(device.image_embed);
  out.decoder.feat_s1 = backend.download(device.feat_s1);
  out.decoder.feat_s0 = backend.download(device.feat_s0);
  return out;
}

}  // namespace sam2rt
