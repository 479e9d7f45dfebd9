#pragma once

#include <vector>

#include "backends/backend.h"
#include "core/weights.h"
#include "model/config.h"

namespace sam2rt {

// FpnNeck (sam2/modeling/backbones/image_encoder.py): a 1x1 lateral conv per
// trunk stage to d_model channels; only the levels in fpn_top_down_levels add
// the nearest x2 upsampling of the next-lower-resolution output (computed top
// down). No output convs. Runs in float32.
class FpnNeck {
 public:
  // Makes the lateral convs resident on `backend`, which runs every op and
  // must outlive the neck.
  FpnNeck(const NeckConfig& config, const WeightMap& weights, Backend& backend);

  // Trunk stage outputs, token-major, highest resolution first -> the FPN levels
  // (before scalp), token-major [H_i, W_i, d_model], highest resolution first.
  // Each stage is let go once its lateral is made (from the coarsest up), so
  // the finest level (64 MB for SAM 2 at 1024) is not made beside every stage.
  std::vector<DeviceTensor> forward(std::vector<DeviceTensor> stages) const;

 private:
  std::vector<LinearHandle> laterals_;  // laterals_[j] is convs[j]: j = 0 is the LOWEST resolution
  std::vector<int> top_down_levels_;
  Backend& backend_;
};

}  // namespace sam2rt
