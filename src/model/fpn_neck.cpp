#include "model/fpn_neck.h"

#include <algorithm>
#include <string>

#include "core/error.h"
#include "kernels/conv2d.h"
#include "kernels/elementwise.h"
#include "kernels/interpolate.h"

namespace sam2rt {

FpnNeck::FpnNeck(const NeckConfig& config, const WeightMap& weights)
    : top_down_levels_(config.fpn_top_down_levels) {
  for (size_t j = 0; j < config.backbone_channel_list.size(); ++j) {
    const std::string prefix = "image_encoder.neck.convs." + std::to_string(j) + ".conv";
    laterals_.push_back({weights.at(prefix + ".weight"), weights.at(prefix + ".bias")});
  }
}

std::vector<Tensor> FpnNeck::forward(const std::vector<Tensor>& stages) const {
  if (stages.size() != laterals_.size()) {
    throw Error("FPN neck: got " + std::to_string(stages.size()) + " trunk stages, expected " +
                std::to_string(laterals_.size()));
  }
  const int last = static_cast<int>(stages.size()) - 1;
  std::vector<Tensor> levels(stages.size());
  Tensor previous;
  for (int level = last; level >= 0; --level) {
    const WeightAndBias& conv = laterals_[static_cast<size_t>(last - level)];
    Tensor lateral = conv1x1_hwc(stages[static_cast<size_t>(level)], conv.weight, conv.bias);
    const bool top_down = std::find(top_down_levels_.begin(), top_down_levels_.end(), level) != top_down_levels_.end();
    if (top_down && !previous.empty()) add_inplace(lateral, upsample_nearest2x_hwc(previous));
    previous = lateral;
    levels[static_cast<size_t>(level)] = lateral;
  }
  return levels;
}

}  // namespace sam2rt
