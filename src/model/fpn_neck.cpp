#include "model/fpn_neck.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "kernels/stage_profile.h"

namespace sam2rt {

FpnNeck::FpnNeck(const NeckConfig& config, const WeightMap& weights, Backend& backend)
    : top_down_levels_(config.fpn_top_down_levels), backend_(backend) {
  for (size_t j = 0; j < config.backbone_channel_list.size(); ++j) {
    const std::string prefix = "image_encoder.neck.convs." + std::to_string(j) + ".conv";
    const Tensor& weight = weights.at(prefix + ".weight");
    if (weight.rank() != 4 || weight.dim(2) != 1 || weight.dim(3) != 1) {
      throw Error("FPN neck: '" + prefix + ".weight' " + shape_to_string(weight.shape()) + " is not a 1x1 kernel");
    }
    lateral_weights_.push_back(weight.reshaped({weight.dim(0), weight.dim(1)}));
    lateral_biases_.push_back(weights.at(prefix + ".bias"));
    laterals_.push_back(backend.linear(lateral_weights_.back(), lateral_biases_.back(), Precision::fp32));
  }
}

int FpnNeck::lateral_index(int level) const {
  const int levels = static_cast<int>(laterals_.size());
  if (level < 0 || level >= levels) {
    throw Error("FPN neck: no level " + std::to_string(level) + " (it has " + std::to_string(levels) + ")");
  }
  return levels - 1 - level;
}

bool FpnNeck::lateral_only(int level) const {
  lateral_index(level);
  return std::find(top_down_levels_.begin(), top_down_levels_.end(), level) == top_down_levels_.end();
}

LinearHandle FpnNeck::composed_with_lateral(int level, const Tensor& weight, const Tensor& bias) const {
  if (!lateral_only(level)) {
    throw Error("FPN neck: level " + std::to_string(level) + " adds the top-down path: no single conv makes it");
  }
  const Tensor& lateral = lateral_weights_[static_cast<size_t>(lateral_index(level))];
  const Tensor& lateral_bias = lateral_biases_[static_cast<size_t>(lateral_index(level))];
  const int64_t out = weight.dim(0), d = lateral.dim(0), in = lateral.dim(1);
  if (weight.rank() != 2 || weight.dim(1) != d || bias.numel() != out) {
    throw Error("FPN neck: a conv of weight " + shape_to_string(weight.shape()) + " and bias " +
                shape_to_string(bias.shape()) + " does not follow level " + std::to_string(level) + "'s " +
                std::to_string(d) + " channels");
  }
  Tensor composed = Tensor::uninitialized({out, in}), composed_bias = Tensor::uninitialized({out});
  std::vector<double> row(static_cast<size_t>(in));
  for (int64_t o = 0; o < out; ++o) {
    std::fill(row.begin(), row.end(), 0.0);
    double b = bias[o];
    for (int64_t c = 0; c < d; ++c) {
      const double w = weight[o * d + c];
      b += w * lateral_bias[c];
      for (int64_t i = 0; i < in; ++i) row[static_cast<size_t>(i)] += w * lateral[c * in + i];
    }
    for (int64_t i = 0; i < in; ++i) composed[o * in + i] = static_cast<float>(row[static_cast<size_t>(i)]);
    composed_bias[o] = static_cast<float>(b);
  }
  return backend_.linear(composed, composed_bias, Precision::fp32);
}

std::vector<DeviceTensor> FpnNeck::forward(std::vector<DeviceTensor> stages, int first_level) const {
  ScopedStage stage_timer("neck");
  if (stages.size() != laterals_.size()) {
    throw Error("FPN neck: got " + std::to_string(stages.size()) + " trunk stages, expected " +
                std::to_string(laterals_.size()));
  }
  const int last = static_cast<int>(stages.size()) - 1;
  std::vector<DeviceTensor> levels(stages.size());
  DeviceTensor previous;
  for (int level = last; level >= std::max(first_level, 0); --level) {
    const LinearHandle& conv = laterals_[static_cast<size_t>(lateral_index(level))];
    DeviceTensor stage = std::move(stages[static_cast<size_t>(level)]);
    if (stage.dim(-1) != conv.in_features) {
      throw Error("FPN neck: stage " + shape_to_string(stage.shape()) + " does not match lateral conv of " +
                  std::to_string(conv.in_features) + " input channels");
    }
    DeviceTensor lateral = backend_.tensor({stage.dim(0), stage.dim(1), conv.out_features});
    backend_.linear_forward(conv, stage, stage.dim(0) * stage.dim(1), lateral, Epilogue::none);
    if (!lateral_only(level) && !previous.empty()) backend_.add_upsampled_nearest2x(lateral, previous);
    previous = lateral;
    levels[static_cast<size_t>(level)] = lateral;
  }
  return levels;
}

}  // namespace sam2rt
