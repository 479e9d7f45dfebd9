#include "model/memory_encoder.h"

#include <cmath>
#include <cstdint>
#include <mutex>
#include <utility>

#include "core/error.h"
#include "kernels/bf16.h"
#include "kernels/layout.h"
#include "model/position_encoding.h"

namespace sam2rt {

namespace {

constexpr float kLayerNorm2dEps = 1e-6f;  // LayerNorm2d's default, and CXBlock's norm

// A 1x1 nn.Conv2d ([out, in, 1, 1]) as the Linear layer it is on channels-last rows.
LinearHandle pointwise_conv(Backend& backend, const WeightMap& weights, const std::string& prefix) {
  const Tensor& weight = weights.at(prefix + ".weight");
  return backend.linear(weight.reshaped({weight.dim(0), weight.numel() / weight.dim(0)}), weights.at(prefix + ".bias"),
                        Precision::fp32);
}

}  // namespace

// One stride step of MaskDownSampler: Conv2d, LayerNorm2d, GELU.
struct MemoryEncoder::DownsampleStep {
  DeviceTensor conv_weight, conv_bias, norm_weight, norm_bias;
};

// CXBlock: gamma is folded into pwconv2 (gamma * (W h + b) = (gamma W) h +
// gamma b, equal up to float rounding), so that the block's last Linear adds
// its output onto the residual in one op.
struct MemoryEncoder::CxBlock {
  DeviceTensor dwconv_weight, dwconv_bias, norm_weight, norm_bias;
  LinearHandle pwconv1, pwconv2_scaled;
};

MemoryEncoder::MemoryEncoder(const ModelConfig& config, const WeightMap& weights, std::shared_ptr<Backend> backend)
    : config_(config), backend_(std::move(backend)) {
  validate_memory_config(config_);
  Backend& b = *backend_;
  const MemoryEncoderConfig& e = config_.memory_encoder;
  const std::string p = "memory_encoder.";
  std::lock_guard lock(b.run_mutex());
  // MaskDownSampler.encoder: [conv, norm, GELU] per step, then the 1x1 conv.
  int steps = 0;
  for (int stride = 1; stride < e.downsampler_total_stride; stride *= e.downsampler_stride) ++steps;
  for (int i = 0; i < steps; ++i) {
    const std::string conv = p + "mask_downsampler.encoder." + std::to_string(3 * i);
    const std::string norm = p + "mask_downsampler.encoder." + std::to_string(3 * i + 1);
    downsampler_.push_back({b.constant(weights.at(conv + ".weight")), b.constant(weights.at(conv + ".bias")),
                            b.constant(weights.at(norm + ".weight")), b.constant(weights.at(norm + ".bias"))});
  }
  downsampler_out_ = pointwise_conv(b, weights, p + "mask_downsampler.encoder." + std::to_string(3 * steps));
  pix_feat_proj_ = pointwise_conv(b, weights, p + "pix_feat_proj");
  for (int i = 0; i < e.fuser_num_layers; ++i) {
    const std::string block = p + "fuser.layers." + std::to_string(i) + ".";
    const Tensor& gamma = weights.at(block + "gamma");
    const Tensor& weight = weights.at(block + "pwconv2.weight");
    const Tensor& bias = weights.at(block + "pwconv2.bias");
    Tensor scaled_weight = weight.clone(), scaled_bias = bias.clone();
    const int64_t out = weight.dim(0), in = weight.dim(1);
    for (int64_t o = 0; o < out; ++o) {
      for (int64_t k = 0; k < in; ++k) scaled_weight[o * in + k] *= gamma[o];
      scaled_bias[o] *= gamma[o];
    }
    fuser_.push_back(
        {b.constant(weights.at(block + "dwconv.weight")), b.constant(weights.at(block + "dwconv.bias")),
         b.constant(weights.at(block + "norm.weight")), b.constant(weights.at(block + "norm.bias")),
         b.linear(weights.at(block + "pwconv1.weight"), weights.at(block + "pwconv1.bias"), Precision::fp32),
         b.linear(scaled_weight, scaled_bias, Precision::fp32)});
  }
  if (e.out_dim != e.in_dim) out_proj_ = pointwise_conv(b, weights, p + "out_proj");
  if (weights.contains("no_obj_embed_spatial")) {
    const Tensor& embed = weights.at("no_obj_embed_spatial");
    no_obj_embed_spatial_ = b.constant(embed.reshaped({embed.numel()}));
  }
  const int64_t side = config_.image_embedding_size();
  position_encoding_ = nchw_to_hwc(sine_position_encoding(e.pos_num_pos_feats, side, side, e.pos_temperature, true))
                           .reshaped({side * side, e.pos_num_pos_feats});
}

MemoryEncoder::~MemoryEncoder() = default;

MemoryEncoderOutput MemoryEncoder::encode(const DeviceTensor& pix_feat, const Tensor& mask_for_mem,
                                          bool object_absent) const {
  std::lock_guard lock(backend_->run_mutex());
  return encode_locked(pix_feat, mask_for_mem, object_absent);
}

MemoryEncoderOutput MemoryEncoder::encode(const Tensor& pix_feat, const Tensor& mask_for_mem,
                                          bool object_absent) const {
  // Uploaded under the same lock as the run: no other program's scratch overwrites it in between.
  std::lock_guard lock(backend_->run_mutex());
  return encode_locked(backend_->input(pix_feat), mask_for_mem, object_absent);
}

MemoryEncoderOutput MemoryEncoder::encode_locked(const DeviceTensor& pix_feat, const Tensor& mask_for_mem,
                                                 bool object_absent) const {
  const MemoryEncoderConfig& e = config_.memory_encoder;
  const int64_t side = config_.image_embedding_size(), pixels = side * side, c = config_.embed_dim();
  const int64_t s = config_.image_size;
  if (pix_feat.numel() != pixels * c || pix_feat.dim(-1) != c) {
    throw Error("memory encoder: pix_feat has shape " + shape_to_string(pix_feat.shape()) + ", expected " +
                shape_to_string({side, side, c}));
  }
  if (mask_for_mem.numel() != s * s || mask_for_mem.dim(-1) != s) {
    throw Error("memory encoder: mask_for_mem has shape " + shape_to_string(mask_for_mem.shape()) + ", expected " +
                shape_to_string({1, s, s}));
  }
  Backend& b = *backend_;
  MemoryEncoderOutput result;
  const DeviceTensor mask = b.input(mask_for_mem.reshaped({1, 1, s, s}));
  DeviceTensor features = b.tensor({pixels, e.out_dim});
  run_once(b, [&] {
    // MaskDownSampler: each step's conv reads NCHW and writes channels-last,
    // where its LayerNorm2d is a LayerNorm of rows.
    DeviceTensor nchw = mask, hwc;
    for (size_t i = 0; i < downsampler_.size(); ++i) {
      const DownsampleStep& step = downsampler_[i];
      const DeviceTensor conv =
          b.conv2d_to_hwc(nchw, step.conv_weight, step.conv_bias, e.downsampler_stride, e.downsampler_padding);
      hwc = b.tensor(conv.shape());
      b.layer_norm_rows(conv, step.norm_weight, step.norm_bias, kLayerNorm2dEps, hwc);
      b.gelu(hwc);
      if (i + 1 < downsampler_.size()) {
        nchw = b.tensor({1, hwc.dim(2), hwc.dim(0), hwc.dim(1)});
        b.hwc_to_nchw(hwc, nchw);
      }
    }
    if (hwc.dim(0) != side || hwc.dim(1) != side) {
      throw Error("memory encoder: the mask downsampler gives a " + shape_to_string(hwc.shape()) +
                  " map, not the features' " + std::to_string(side) + " x " + std::to_string(side));
    }
    // x = pix_feat_proj(pix_feat) + downsampled mask.
    DeviceTensor x = b.tensor({side, side, c});
    b.linear_forward(downsampler_out_, hwc, pixels, x, Epilogue::none);
    b.linear_forward(pix_feat_proj_, pix_feat, pixels, x, Epilogue::accumulate);
    // Fuser: x + gamma * pwconv2(GELU(pwconv1(LayerNorm(dwconv(x))))) per block.
    for (const CxBlock& block : fuser_) {
      DeviceTensor mixed = b.tensor({side, side, c}), normed = b.tensor({side, side, c});
      b.depthwise_conv2d_hwc(x, block.dwconv_weight, block.dwconv_bias, e.fuser_padding, mixed);
      b.layer_norm_rows(mixed, block.norm_weight, block.norm_bias, kLayerNorm2dEps, normed);
      DeviceTensor hidden = b.tensor({pixels, block.pwconv1.out_features});
      b.linear_forward(block.pwconv1, normed, pixels, hidden, Epilogue::gelu);
      b.linear_forward(block.pwconv2_scaled, hidden, pixels, x, Epilogue::accumulate);
    }
    if (out_proj_.impl != nullptr) {
      b.linear_forward(out_proj_, x, pixels, features, Epilogue::none);
    } else {
      b.copy(x, features);
    }
    // maskmem_features += (1 - is_obj_appearing) * no_obj_embed_spatial: the
    // embedding where the object is absent, nothing (+0) where it appears.
    if (object_absent && !no_obj_embed_spatial_.empty()) b.add(features, no_obj_embed_spatial_, features);
  });
  result.features = b.download(features).clone();
  result.pos_enc = position_encoding_.clone();
  return result;
}

Tensor memory_encoder_mask(const Tensor& high_res_logits, bool binarize, const ModelConfig& config) {
  const float scale = static_cast<float>(config.sigmoid_scale_for_mem_enc);
  const float bias = static_cast<float>(config.sigmoid_bias_for_mem_enc);
  Tensor mask(high_res_logits.shape());
  for (int64_t i = 0; i < mask.numel(); ++i) {
    const float logit = high_res_logits[i];
    const float probability = binarize ? (logit > 0.0f ? 1.0f : 0.0f) : 1.0f / (1.0f + std::exp(-logit));
    mask[i] = probability * scale + bias;
  }
  return mask;
}

void round_to_bfloat16_in_place(Tensor& x) {
  std::vector<uint16_t> narrow(static_cast<size_t>(x.numel()));
  convert_to_bf16(x.data(), narrow.data(), x.numel());
  convert_from_bf16(narrow.data(), x.data(), x.numel());
}

}  // namespace sam2rt
