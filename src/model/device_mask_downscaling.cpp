#include "model/device_mask_downscaling.h"

#include <string>

#include "core/error.h"

namespace sam2rt {

namespace {

constexpr float kLayerNorm2dEps = 1e-6f;  // the prompt encoder's LayerNorm2d

}  // namespace

DeviceMaskDownscaling::DeviceMaskDownscaling(const ModelConfig& config, const WeightMap& weights, Backend& backend) {
  const std::string d = "sam_prompt_encoder.mask_downscaling.";
  auto step = [&](int conv, int norm) {
    auto at = [&](int layer, const char* name) {
      return backend.constant(weights.at(d + std::to_string(layer) + "." + name));
    };
    return DownscalingStep{at(conv, "weight"), at(conv, "bias"), at(norm, "weight"), at(norm, "bias")};
  };
  first_ = step(0, 1);
  second_ = step(3, 4);
  const Tensor& pointwise = weights.at(d + "6.weight");
  if (pointwise.rank() != 4 || pointwise.dim(0) != config.embed_dim() || pointwise.dim(2) != 1 ||
      pointwise.dim(3) != 1) {
    throw Error("model config '" + config.name + "': mask_downscaling.6.weight has shape " +
                shape_to_string(pointwise.shape()) + ", expected a 1x1 conv to " + std::to_string(config.embed_dim()) +
                " channels");
  }
  pointwise_ = backend.linear(pointwise.reshaped({pointwise.dim(0), pointwise.dim(1)}), weights.at(d + "6.bias"),
                              Precision::fp32);
}

DeviceTensor DeviceMaskDownscaling::DownscalingStep::operator()(Backend& backend, const DeviceTensor& x) const {
  const DeviceTensor conv = backend.conv2d_to_hwc(x, conv_weight, conv_bias, 2, 0);
  DeviceTensor normed = backend.tensor(conv.shape());
  backend.layer_norm_rows(conv, norm_weight, norm_bias, kLayerNorm2dEps, normed);
  backend.gelu(normed);
  return normed;
}

DeviceTensor DeviceMaskDownscaling::operator()(Backend& backend, const DeviceTensor& masks) const {
  const DeviceTensor half = first_(backend, masks);
  // The second conv reads NCHW, as the first did its one-channel masks.
  DeviceTensor half_nchw = backend.tensor({1, half.dim(2), half.dim(0), half.dim(1)});
  backend.hwc_to_nchw(half, half_nchw);
  const DeviceTensor quarter = second_(backend, half_nchw);
  const int64_t rows = quarter.dim(0) * quarter.dim(1);
  DeviceTensor dense = backend.tensor({rows, pointwise_.out_features});
  backend.linear_forward(pointwise_, quarter.reshaped({rows, quarter.dim(2)}), rows, dense, Epilogue::none);
  return dense;
}

}  // namespace sam2rt
