#include "model/memory_bank.h"

#include <algorithm>
#include <cstdlib>

#include "core/error.h"

namespace sam2rt {

namespace {

const FrameOutput* find(const std::map<int64_t, FrameOutput>& outputs, int64_t frame) {
  const auto it = outputs.find(frame);
  return it == outputs.end() ? nullptr : &it->second;
}

// Python's floor division, for the memory stride's frame arithmetic.
int64_t floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

}  // namespace

CondFrameSplit select_closest_cond_frames(int64_t frame_idx, const std::map<int64_t, FrameOutput>& cond,
                                          int max_cond_frame_num) {
  CondFrameSplit split;
  if (max_cond_frame_num == -1 || static_cast<int64_t>(cond.size()) <= max_cond_frame_num) {
    for (const auto& [t, output] : cond) split.selected.push_back(t);
    return split;
  }
  if (max_cond_frame_num < 2) throw Error("max_cond_frames_in_attn must allow 2 or more conditioning frames");
  // The closest conditioning frame before, the closest at or after, then the
  // temporally closest others (ties in frame order, as Python's stable sort).
  std::vector<int64_t> before, rest;
  int64_t idx_before = -1, idx_after = -1;
  bool has_before = false, has_after = false;
  for (const auto& [t, output] : cond) {
    if (t < frame_idx && (!has_before || t > idx_before)) idx_before = t, has_before = true;
    if (t >= frame_idx && (!has_after || t < idx_after)) idx_after = t, has_after = true;
  }
  if (has_before) split.selected.push_back(idx_before);
  if (has_after) split.selected.push_back(idx_after);
  for (const auto& [t, output] : cond) {
    if (std::find(split.selected.begin(), split.selected.end(), t) == split.selected.end()) rest.push_back(t);
  }
  std::stable_sort(rest.begin(), rest.end(),
                   [frame_idx](int64_t a, int64_t b) { return std::llabs(a - frame_idx) < std::llabs(b - frame_idx); });
  const size_t remain = static_cast<size_t>(max_cond_frame_num) - split.selected.size();
  for (size_t i = 0; i < rest.size(); ++i) (i < remain ? split.selected : split.unselected).push_back(rest[i]);
  return split;
}

MemorySelection select_memories(const ObjectOutputs& outputs, int64_t frame_idx, int64_t num_frames, bool reverse,
                                const TrackingConfig& config) {
  if (outputs.cond.empty()) throw Error("tracking a frame needs a conditioning frame (a prompted frame) first");
  const CondFrameSplit split = select_closest_cond_frames(frame_idx, outputs.cond, config.max_cond_frames_in_attn);
  auto unselected_output = [&](int64_t t) -> const FrameOutput* {
    if (std::find(split.unselected.begin(), split.unselected.end(), t) == split.unselected.end()) return nullptr;
    return find(outputs.cond, t);
  };

  MemorySelection selection;
  // The conditioning frames all have t_pos 0.
  for (const int64_t t : split.selected) selection.memories.push_back({find(outputs.cond, t), 0});
  // The previous num_maskmem - 1 frames: the last one, then every stride-th
  // before it (after it in reverse), the earliest with t_pos 1.
  const int64_t stride = config.memory_temporal_stride_for_eval;
  for (int t_pos = 1; t_pos < config.num_maskmem; ++t_pos) {
    const int64_t t_rel = config.num_maskmem - t_pos;
    int64_t prev;
    if (t_rel == 1) {
      prev = reverse ? frame_idx + 1 : frame_idx - 1;
    } else if (!reverse) {
      prev = floor_div(frame_idx - 2, stride) * stride - (t_rel - 2) * stride;
    } else {
      prev = -floor_div(-(frame_idx + 2), stride) * stride + (t_rel - 2) * stride;
    }
    const FrameOutput* output = find(outputs.non_cond, prev);
    if (output == nullptr) output = unselected_output(prev);
    if (output != nullptr) selection.memories.push_back({output, t_pos});
  }

  if (!config.use_obj_ptrs_in_encoder) return selection;
  const int64_t max_ptrs = std::min<int64_t>(num_frames, config.max_obj_ptrs_in_encoder);
  selection.max_obj_ptrs_in_encoder = max_ptrs;
  const int64_t sign = reverse ? -1 : 1;
  // The selected conditioning frames' pointers (only those in the past).
  for (const int64_t t : split.selected) {
    if (config.only_obj_ptrs_in_the_past_for_eval && (reverse ? t < frame_idx : t > frame_idx)) continue;
    const int64_t position = config.use_signed_tpos_enc_to_obj_ptrs ? (frame_idx - t) * sign : std::llabs(frame_idx - t);
    selection.pointers.push_back({find(outputs.cond, t), position});
  }
  // Up to max_ptrs - 1 previous frames' pointers, the nearest first.
  for (int64_t t_diff = 1; t_diff < max_ptrs; ++t_diff) {
    const int64_t t = reverse ? frame_idx + t_diff : frame_idx - t_diff;
    if (t < 0 || t >= num_frames) break;
    const FrameOutput* output = find(outputs.non_cond, t);
    if (output == nullptr) output = unselected_output(t);
    if (output != nullptr) selection.pointers.push_back({output, t_diff});
  }
  return selection;
}

}  // namespace sam2rt
