#include "model/fpn_neck.h"

#include <algorithm>
#include <string>
#include <utility>

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
    laterals_.push_back(
        backend.linear(weight.reshaped({weight.dim(0), weight.dim(1)}), weights.at(prefix + ".bias"), Precision::fp32));
  }
}

std::vector<DeviceTensor> FpnNeck::forward(std::vector<DeviceTensor> stages) const {
  ScopedStage stage_timer("neck");
  if (stages.size() != laterals_.size()) {
    throw Error("FPN neck: got " + std::to_string(stages.size()) + " trunk stages, expected " +
                std::to_string(laterals_.size()));
  }
  const int last = static_cast<int>(stages.size()) - 1;
  std::vector<DeviceTensor> levels(stages.size());
  DeviceTensor previous;
  for (int level = last; level >= 0; --level) {
    const LinearHandle& conv = laterals_[static_cast<size_t>(last - level)];
    DeviceTensor stage = std::move(stages[static_cast<size_t>(level)]);
    if (stage.dim(-1) != conv.in_features) {
      throw Error("FPN neck: stage " + shape_to_string(stage.shape()) + " does not match lateral conv of " +
                  std::to_string(conv.in_features) + " input channels");
    }
    DeviceTensor lateral = backend_.tensor({stage.dim(0), stage.dim(1), conv.out_features});
    backend_.linear_forward(conv, stage, stage.dim(0) * stage.dim(1), lateral, Epilogue::none);
    const bool top_down = std::find(top_down_levels_.begin(), top_down_levels_.end(), level) != top_down_levels_.end();
    if (top_down && !previous.empty()) backend_.add_upsampled_nearest2x(lateral, previous);
    previous = lateral;
    levels[static_cast<size_t>(level)] = lateral;
  }
  return levels;
}

}  // namespace sam2rt
