#include "model/encoder_cost.h"

#include <algorithm>
#include <tuple>
#include <vector>

namespace sam2rt {

namespace {

int64_t round_up(int64_t value, int64_t multiple) { return (value + multiple - 1) / multiple * multiple; }

}  // namespace

EncoderCost encoder_cost(const ModelConfig& config) {
  const HieraConfig& t = config.trunk;
  EncoderCost cost;
  int64_t grid = config.image_size / 4;
  int64_t dim = t.embed_dim;
  cost.patch_embed = grid * grid * dim * 3 * 7 * 7;

  std::vector<int> stage_ends;
  for (int s = 0, sum = 0; s < static_cast<int>(t.stages.size()); ++s) stage_ends.push_back((sum += t.stages[s]) - 1);
  auto is_stage_end = [&](int b) { return std::find(stage_ends.begin(), stage_ends.end(), b) != stage_ends.end(); };
  int stage = 0;
  for (int block = 0; block < config.num_blocks(); ++block) {
    int64_t window = t.window_spec[static_cast<size_t>(stage)];  // one-block lag, as in Hiera.__init__
    if (std::find(t.global_att_blocks.begin(), t.global_att_blocks.end(), block) != t.global_att_blocks.end()) {
      window = 0;
    }
    const bool pools = block > 0 && is_stage_end(block - 1) && stage < t.q_pool;
    int64_t dim_out = dim;
    if (block > 0 && is_stage_end(block - 1)) {
      dim_out = dim * 2;
      ++stage;
    }
    const int64_t out_grid = pools ? grid / 2 : grid;
    int64_t in_tokens, out_tokens;  // tokens the qkv and the output projection see (padded when windowed)
    if (window > 0) {
      const int64_t padded = round_up(grid, window);
      const int64_t out_window = pools ? window / 2 : window;
      const int64_t windows = (padded / window) * (padded / window);
      in_tokens = padded * padded;
      out_tokens = round_up(out_grid, out_window) * round_up(out_grid, out_window);
      cost.skipped += (in_tokens - grid * grid) * dim * 3 * dim_out + (out_tokens - out_grid * out_grid) * dim_out * dim_out;
      cost.attention += windows * (out_window * out_window) * (window * window) * dim_out * 2;
    } else {
      in_tokens = grid * grid;
      out_tokens = out_grid * out_grid;
      cost.attention += out_tokens * in_tokens * dim_out * 2;
    }
    cost.linear += in_tokens * dim * 3 * dim_out + out_tokens * dim_out * dim_out;
    cost.linear += out_grid * out_grid * dim_out * static_cast<int64_t>(dim_out * t.mlp_ratio) * 2;
    if (dim_out != dim) cost.linear += grid * grid * dim * dim_out;
    grid = out_grid;
    dim = dim_out;
  }

  const int64_t d = config.neck.d_model;
  int64_t level_grid = config.image_size / 4;
  for (auto it = config.neck.backbone_channel_list.rbegin(); it != config.neck.backbone_channel_list.rend(); ++it) {
    cost.neck += level_grid * level_grid * *it * d;
    level_grid /= 2;
  }
  const int64_t s0 = config.image_size / 4, s1 = config.image_size / 8;
  cost.neck += s0 * s0 * d * (d / 8) + s1 * s1 * d * (d / 4);
  // The decoder's conv of a lateral-only level (0: d / 8 outputs, 1: d / 4)
  // composed with the lateral conv of its stage's channels.
  const std::vector<int>& channels = config.neck.backbone_channel_list;  // lowest resolution first
  const std::vector<int>& top_down = config.neck.fpn_top_down_levels;
  for (const auto& [level, grid_side, outputs] : {std::tuple{0, s0, d / 8}, std::tuple{1, s1, d / 4}}) {
    if (std::find(top_down.begin(), top_down.end(), level) != top_down.end()) continue;
    const int64_t pixels = grid_side * grid_side, stage_channels = channels[channels.size() - 1 - level];
    cost.skipped += pixels * stage_channels * d + pixels * d * outputs - pixels * stage_channels * outputs;
  }
  return cost;
}

}  // namespace sam2rt
