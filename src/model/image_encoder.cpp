#include "model/image_encoder.h"

#include <string>

#include "core/error.h"
#include "kernels/conv2d.h"
#include "kernels/elementwise.h"
#include "kernels/layout.h"
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

WeightAndBias read_conv(const WeightMap& weights, const std::string& prefix) {
  return {weights.at(prefix + ".weight"), weights.at(prefix + ".bias")};
}

}  // namespace

ImageEncoder::ImageEncoder(const ModelConfig& config, const WeightMap& weights)
    : config_(checked(config, weights)),
      trunk_(config, weights),
      neck_(config.neck, weights),
      conv_s0_(read_conv(weights, "sam_mask_decoder.conv_s0")),
      conv_s1_(read_conv(weights, "sam_mask_decoder.conv_s1")),
      no_mem_embed_(weights.at("no_mem_embed").reshaped({config.embed_dim()})) {}

EncoderOutputs ImageEncoder::encode(const Tensor& image, const EncodeOptions& options) const {
  const int64_t size = config_.image_size;
  if (image.shape() != Shape{1, 3, size, size}) {
    throw Error("image encoder: input is " + shape_to_string(image.shape()) + ", expected [1, 3, " +
                std::to_string(size) + ", " + std::to_string(size) + "] (preprocess the image to the model's " +
                "image_size first)");
  }
  EncoderOutputs out;
  const Tensor embedded = trunk_.embed(image);
  out.patch_embed_pos = hwc_to_nchw(embedded);
  const std::vector<Tensor> stages = trunk_.forward_blocks(embedded);
  for (const Tensor& stage : stages) out.trunk_stages.push_back(hwc_to_nchw(stage));

  std::vector<Tensor> levels = neck_.forward(stages);
  levels.resize(levels.size() - static_cast<size_t>(config_.neck.scalp));  // drop the lowest resolution
  for (const Tensor& level : levels) {
    out.neck_levels.push_back(hwc_to_nchw(level));
    if (options.position_encodings) {
      out.neck_pos.push_back(sine_position_encoding(config_.neck.pos_num_pos_feats, level.dim(0), level.dim(1),
                                                    config_.neck.pos_temperature, config_.neck.pos_normalize));
    }
  }

  Tensor image_embed = levels[2].clone();
  add_channel_vector_inplace(image_embed, no_mem_embed_);
  out.decoder.image_embed = hwc_to_nchw(image_embed);
  out.decoder.feat_s1 = hwc_to_nchw(conv1x1_hwc(levels[1], conv_s1_.weight, conv_s1_.bias));
  out.decoder.feat_s0 = hwc_to_nchw(conv1x1_hwc(levels[0], conv_s0_.weight, conv_s0_.bias));
  return out;
}

}  // namespace sam2rt
