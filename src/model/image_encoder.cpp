#include "model/image_encoder.h"

#include <mutex>
#include <string>

#include "core/error.h"
#include "kernels/elementwise.h"
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

// A 1x1 conv as a Linear layer over the channels of a token-major map.
PackedLinear read_conv1x1(const WeightMap& weights, const std::string& prefix) {
  const Tensor& weight = weights.at(prefix + ".weight");
  if (weight.rank() != 4 || weight.dim(2) != 1 || weight.dim(3) != 1) {
    throw Error("image encoder: '" + prefix + ".weight' " + shape_to_string(weight.shape()) + " is not a 1x1 kernel");
  }
  return PackedLinear(weight.reshaped({weight.dim(0), weight.dim(1)}), weights.at(prefix + ".bias"),
                      Precision::fp32);
}

}  // namespace

struct ImageEncoder::Bf16Trunk {
  std::once_flag built;
  std::unique_ptr<HieraTrunk> trunk;
};

ImageEncoder::ImageEncoder(const ModelConfig& config, const WeightMap& weights)
    : config_(checked(config, weights)),
      weights_(weights),
      pool_(std::make_shared<BufferPool>()),
      trunk_(config, weights, Precision::fp32, pool_),
      bf16_trunk_(std::make_shared<Bf16Trunk>()),
      neck_(config.neck, weights, pool_),
      conv_s0_(read_conv1x1(weights, "sam_mask_decoder.conv_s0")),
      conv_s1_(read_conv1x1(weights, "sam_mask_decoder.conv_s1")),
      no_mem_embed_(weights.at("no_mem_embed").reshaped({config.embed_dim()})) {}

const HieraTrunk& ImageEncoder::trunk(Precision precision) const {
  if (precision == Precision::fp32) return trunk_;
  std::call_once(bf16_trunk_->built, [this] {
    bf16_trunk_->trunk = std::make_unique<HieraTrunk>(config_, weights_, Precision::bf16, pool_);
  });
  return *bf16_trunk_->trunk;
}

EncoderOutputs ImageEncoder::encode(const Tensor& image, const EncodeOptions& options) const {
  const int64_t size = config_.image_size;
  if (image.shape() != Shape{1, 3, size, size}) {
    throw Error("image encoder: input is " + shape_to_string(image.shape()) + ", expected [1, 3, " +
                std::to_string(size) + ", " + std::to_string(size) + "] (preprocess the image to the model's " +
                "image_size first)");
  }
  const HieraTrunk& trunk = this->trunk(options.precision);
  BufferPool& pool = *pool_;
  auto to_nchw = [&pool](const Tensor& hwc) {
    ScopedStage stage("to NCHW");
    Tensor nchw = pool.tensor({1, hwc.dim(2), hwc.dim(0), hwc.dim(1)});
    hwc_to_nchw_into(hwc, nchw);
    return nchw;
  };

  EncoderOutputs out;
  Tensor embedded;
  {
    ScopedStage stage("patch embed");
    embedded = trunk.embed(image);
  }
  if (options.trunk_outputs) out.patch_embed_pos = to_nchw(embedded);
  const std::vector<Tensor> stages = trunk.forward_blocks(std::move(embedded));
  if (options.trunk_outputs) {
    for (const Tensor& stage : stages) out.trunk_stages.push_back(to_nchw(stage));
  }

  std::vector<Tensor> levels = neck_.forward(stages);
  levels.resize(levels.size() - static_cast<size_t>(config_.neck.scalp));  // drop the lowest resolution
  for (const Tensor& level : levels) {
    out.neck_levels.push_back(to_nchw(level));
    if (options.position_encodings) {
      out.neck_pos.push_back(sine_position_encoding(config_.neck.pos_num_pos_feats, level.dim(0), level.dim(1),
                                                    config_.neck.pos_temperature, config_.neck.pos_normalize));
    }
  }

  ScopedStage stage("decoder features");
  Tensor image_embed = pool.tensor(levels[2].shape());
  std::copy(levels[2].begin(), levels[2].end(), image_embed.begin());
  add_channel_vector_inplace(image_embed, no_mem_embed_);
  out.decoder.image_embed = to_nchw(image_embed);
  auto project = [&](const PackedLinear& conv, const Tensor& level) {
    Tensor hwc = pool.tensor({level.dim(0), level.dim(1), conv.out_features()});
    conv.forward(level.data(), level.dim(0) * level.dim(1), hwc.data());
    return to_nchw(hwc);
  };
  out.decoder.feat_s1 = project(conv_s1_, levels[1]);
  out.decoder.feat_s0 = project(conv_s0_, levels[0]);
  return out;
}

}  // namespace sam2rt
