#include "api/model_identity.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "core/error.h"
#include "model/weight_manifest.h"

namespace sam2rt {

const char* const kPreprocessing = "pillow-bilinear-uint8+imagenet-mean-std";

namespace {

constexpr int kSampledValuesPerTensor = 16;

class Fnv1a64 {
 public:
  void bytes(const void* data, size_t size) {
    const auto* p = static_cast<const uint8_t*>(data);
    for (size_t i = 0; i < size; ++i) {
      hash_ ^= p[i];
      hash_ *= 0x100000001b3ull;
    }
  }
  void text(const std::string& s) { bytes(s.data(), s.size() + 1); }  // the terminator separates fields
  void integer(int64_t v) { bytes(&v, sizeof v); }
  std::string hex() const {
    char buffer[17];
    std::snprintf(buffer, sizeof buffer, "%016llx", static_cast<unsigned long long>(hash_));
    return buffer;
  }

 private:
  uint64_t hash_ = 0xcbf29ce484222325ull;
};

template <typename Container>
std::string joined(const Container& values) {
  std::ostringstream out;
  for (const auto& v : values) out << v << ',';
  return out.str();
}

}  // namespace

std::string config_hash(const ModelConfig& c) {
  // Text with round-trip precision for the doubles: the same values always give the same bytes.
  std::ostringstream s;
  s.precision(17);
  const HieraConfig& t = c.trunk;
  const NeckConfig& n = c.neck;
  s << "image_size=" << c.image_size << ";stride=" << c.backbone_stride << ";trunk=" << t.embed_dim << '/'
    << t.num_heads << '/' << joined(t.stages) << '/' << joined(t.global_att_blocks) << '/' << joined(t.window_spec)
    << '/' << joined(t.window_pos_embed_bkg_spatial_size) << '/' << t.q_pool << '/' << joined(t.q_stride) << '/'
    << t.dim_mul << '/' << t.head_mul << '/' << t.mlp_ratio << ";neck=" << n.d_model << '/'
    << joined(n.backbone_channel_list) << '/' << joined(n.fpn_top_down_levels) << '/' << n.fpn_interp_model << '/'
    << n.scalp << '/' << n.pos_num_pos_feats << '/' << n.pos_normalize << '/' << n.pos_temperature
    << ";heads=" << c.use_high_res_features_in_sam << c.pred_obj_scores << c.pred_obj_scores_mlp
    << c.iou_prediction_use_sigmoid << '/' << c.num_multimask_outputs << '/' << c.decoder_depth << '/'
    << c.decoder_num_heads << '/' << c.decoder_mlp_dim << '/' << c.attention_downsample_rate << '/'
    << c.iou_head_depth << '/' << c.iou_head_hidden_dim << '/' << c.mask_in_chans << '/' << c.stability_delta << '/'
    << c.stability_thresh << '/' << c.mask_threshold;
  Fnv1a64 hash;
  hash.text(s.str());
  return hash.hex();
}

std::string weights_fingerprint(const WeightMap& weights, const ModelConfig& config) {
  Fnv1a64 hash;
  for (const WeightSpec& spec : image_path_weights(config)) {
    const Tensor& tensor = weights.at(spec.key);
    hash.text(spec.key);
    for (int64_t d : tensor.shape()) hash.integer(d);
    const int64_t n = tensor.numel();
    const int64_t samples = std::min<int64_t>(n, kSampledValuesPerTensor);
    for (int64_t i = 0; i < samples; ++i) {
      const int64_t index = samples == 1 ? 0 : i * (n - 1) / (samples - 1);
      uint32_t bits = 0;
      std::memcpy(&bits, tensor.data() + index, sizeof bits);
      hash.integer(bits);
    }
  }
  return hash.hex();
}

ModelIdentity identify_model(const ModelConfig& config, const WeightMap& weights) {
  return ModelIdentity{.variant = config.name,
                       .config_hash = config_hash(config),
                       .weights_fingerprint = weights_fingerprint(weights, config),
                       .preprocessing = kPreprocessing,
                       .image_size = config.image_size};
}

void require_same_model(const ModelIdentity& features, const ModelIdentity& model, const std::string& origin) {
  auto refuse = [&](const std::string& what, const std::string& theirs, const std::string& ours) {
    throw Error(origin + " were made with " + what + " " + theirs + ", but this model has " + what + " " + ours +
                "; encode the image again with this model (or pass --force-features to use them anyway)");
  };
  if (features.config_hash != model.config_hash) {
    refuse("config", "'" + features.variant + "' (hash " + features.config_hash + ")",
           "'" + model.variant + "' (hash " + model.config_hash + ")");
  }
  if (features.image_size != model.image_size) {
    refuse("image_size", std::to_string(features.image_size), std::to_string(model.image_size));
  }
  if (features.preprocessing != model.preprocessing) {
    refuse("preprocessing", "'" + features.preprocessing + "'", "'" + model.preprocessing + "'");
  }
  if (features.weights_fingerprint != model.weights_fingerprint) {
    refuse("weights", features.weights_fingerprint, model.weights_fingerprint);
  }
}

}  // namespace sam2rt
