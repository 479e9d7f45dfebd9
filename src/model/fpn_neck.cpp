#include "model/fpn_neck.h"

#include <algorithm>
#include <string>

#include "core/error.h"
#include "kernels/interpolate.h"
#include "kernels/stage_profile.h"

namespace sam2rt {

FpnNeck::FpnNeck(const NeckConfig& config, const WeightMap& weights, std::shared_ptr<BufferPool> pool)
    : top_down_levels_(config.fpn_top_down_levels), pool_(std::move(pool)) {
  for (size_t j = 0; j < config.backbone_channel_list.size(); ++j) {
    const std::string prefix = "image_encoder.neck.convs." + std::to_string(j) + ".conv";
    const Tensor& weight = weights.at(prefix + ".weight");
    if (weight.rank() != 4 || weight.dim(2) != 1 || weight.dim(3) != 1) {
      throw Error("FPN neck: '" + prefix + ".weight' " + shape_to_string(weight.shape()) + " is not a 1x1 kernel");
    }
    laterals_.emplace_back(weight.reshaped({weight.dim(0), weight.dim(1)}), weights.at(prefix + ".bias"),
                           Precision::fp32);
  }
}

std::vector<Tensor> FpnNeck::forward(const std::vector<Tensor>& stages) const {
  ScopedStage stage_timer("neck");
  if (stages.size() != laterals_.size()) {
    throw Error("FPN neck: got " + std::to_string(stages.size()) + " trunk stages, expected " +
                std::to_string(laterals_.size()));
  }
  const int last = static_cast<int>(stages.size()) - 1;
  std::vector<Tensor> levels(stages.size());
  Tensor previous;
  for (int level = last; level >= 0; --level) {
    const PackedLinear& conv = laterals_[static_cast<size_t>(last - level)];
    const Tensor& stage = stages[static_cast<size_t>(level)];
    if (stage.dim(-1) != conv.in_features()) {
      throw Error("FPN neck: stage " + shape_to_string(stage.shape()) + " does not match lateral conv of " +
                  std::to_string(conv.in_features()) + " input channels");
    }
    Tensor lateral = pool_->tensor({stage.dim(0), stage.dim(1), conv.out_features()});
    conv.forward(stage.data(), stage.dim(0) * stage.dim(1), lateral.data());
    const bool top_down = std::find(top_down_levels_.begin(), top_down_levels_.end(), level) != top_down_levels_.end();
    if (top_down && !previous.empty()) add_upsampled_nearest2x_inplace(lateral, previous);
    previous = lateral;
    levels[static_cast<size_t>(level)] = lateral;
  }
  return levels;
}

}  // namespace sam2rt
