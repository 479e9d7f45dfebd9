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
  // (before scalp), token-major [H_i, W_i, d_model], highest resolution first;
  // the levels below `first_level` are left empty (not computed). Each stage
  // is let go once its lateral is made (from the coarsest up), so the finest
  // level (64 MB for SAM 2 at 1024) is not made beside every stage.
  std::vector<DeviceTensor> forward(std::vector<DeviceTensor> stages, int first_level = 0) const;

  // Whether `level` (0 = highest resolution) is its lateral conv alone: not a
  // top-down level (levels 0 and 1 in every SAM 2.1 config).
  bool lateral_only(int level) const;
  // A 1x1 conv (weight [out, d_model], bias [out]) applied to a lateral-only
  // level, as one 1x1 conv from the level's trunk stage: conv(lateral(x)) =
  // (W Wl) x + (W bl + b), the product and the bias summed in double and rounded
  // once. The same function in exact arithmetic, a product of d_model fewer
  // multiply-adds per output in float32. Resident on the neck's backend.
  LinearHandle composed_with_lateral(int level, const Tensor& weight, const Tensor& bias) const;

 private:
  int lateral_index(int level) const;

  std::vector<LinearHandle> laterals_;  // laterals_[j] is convs[j]: j = 0 is the LOWEST resolution
  std::vector<Tensor> lateral_weights_, lateral_biases_;  // their host tensors, [d_model, C_j] and [d_model]
  std::vector<int> top_down_levels_;
  Backend& backend_;
};

}  // namespace sam2rt
