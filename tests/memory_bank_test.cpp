// The video tracker's choice of memories and object pointers
// (SAM2Base._prepare_memory_conditioned_features), on hand-worked cases.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "core/error.h"
#include "model/memory_bank.h"

namespace sam2rt {
namespace {

ObjectOutputs outputs_at(const std::vector<int64_t>& cond, const std::vector<int64_t>& non_cond) {
  ObjectOutputs outputs;
  for (const int64_t t : cond) outputs.cond[t] = FrameOutput{};
  for (const int64_t t : non_cond) outputs.non_cond[t] = FrameOutput{};
  return outputs;
}

// (frame, t_pos) of each memory, (frame, position) of each pointer.
std::pair<std::vector<std::pair<int64_t, int>>, std::vector<std::pair<int64_t, int64_t>>> chosen(
    const ObjectOutputs& outputs, const MemorySelection& selection) {
  auto frame_of = [&](const FrameOutput* out) {
    for (const auto* map : {&outputs.cond, &outputs.non_cond})
      for (const auto& [t, o] : *map)
        if (&o == out) return t;
    return int64_t{-1000};
  };
  std::vector<std::pair<int64_t, int>> memories;
  for (const auto& m : selection.memories) memories.emplace_back(frame_of(m.output), m.t_pos);
  std::vector<std::pair<int64_t, int64_t>> pointers;
  for (const auto& p : selection.pointers) pointers.emplace_back(frame_of(p.output), p.position);
  return {memories, pointers};
}

TEST(MemoryBank, ForwardTakesTheCondFrameAndTheLastSixFrames) {
  const ObjectOutputs outputs = outputs_at({0}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  const MemorySelection s = select_memories(outputs, 10, 30, false, TrackingConfig{});
  const auto [memories, pointers] = chosen(outputs, s);
  EXPECT_EQ(memories, (std::vector<std::pair<int64_t, int>>{{0, 0}, {4, 1}, {5, 2}, {6, 3}, {7, 4}, {8, 5}, {9, 6}}));
  // The cond frame's pointer at distance 10, then frames 9..1 (frame 0 is a cond frame, not a tracked one).
  std::vector<std::pair<int64_t, int64_t>> want{{0, 10}};
  for (int64_t d = 1; d <= 9; ++d) want.emplace_back(10 - d, d);
  EXPECT_EQ(pointers, want);
  EXPECT_EQ(s.max_obj_ptrs_in_encoder, 16);
}

TEST(MemoryBank, ReverseLooksAheadWithSignedPositions) {
  const ObjectOutputs outputs = outputs_at({10}, {6, 7, 8, 9});
  const MemorySelection s = select_memories(outputs, 5, 12, true, TrackingConfig{});
  const auto [memories, pointers] = chosen(outputs, s);
  // t_pos 6 is frame 6, t_pos 5 frame 7, ..., t_pos 2 frame 10 (a cond frame: not among the tracked ones).
  EXPECT_EQ(memories, (std::vector<std::pair<int64_t, int>>{{10, 0}, {9, 3}, {8, 4}, {7, 5}, {6, 6}}));
  EXPECT_EQ(pointers, (std::vector<std::pair<int64_t, int64_t>>{{10, 5}, {6, 1}, {7, 2}, {8, 3}, {9, 4}}));
  EXPECT_EQ(s.max_obj_ptrs_in_encoder, 12);
}

TEST(MemoryBank, PointersOfFutureCondFramesAreLeftOut) {
  const ObjectOutputs outputs = outputs_at({0, 20}, {1, 2});
  const MemorySelection s = select_memories(outputs, 3, 40, false, TrackingConfig{});
  const auto [memories, pointers] = chosen(outputs, s);
  EXPECT_EQ(memories, (std::vector<std::pair<int64_t, int>>{{0, 0}, {20, 0}, {1, 5}, {2, 6}}));
  EXPECT_EQ(pointers, (std::vector<std::pair<int64_t, int64_t>>{{0, 3}, {2, 1}, {1, 2}}));
}

TEST(MemoryBank, AtMostMaxCondFramesTheClosestBeforeAndAfter) {
  TrackingConfig config;
  config.max_cond_frames_in_attn = 2;
  const ObjectOutputs outputs = outputs_at({0, 5, 20}, {6, 7});
  const CondFrameSplit split = select_closest_cond_frames(8, outputs.cond, 2);
  EXPECT_EQ(split.selected, (std::vector<int64_t>{5, 20}));
  EXPECT_EQ(split.unselected, (std::vector<int64_t>{0}));
  const MemorySelection s = select_memories(outputs, 8, 40, false, config);
  const auto [memories, pointers] = chosen(outputs, s);
  EXPECT_EQ(memories, (std::vector<std::pair<int64_t, int>>{{5, 0}, {20, 0}, {6, 5}, {7, 6}}));
  // An unselected cond frame within reach is read as a tracked frame.
  EXPECT_EQ(pointers, (std::vector<std::pair<int64_t, int64_t>>{{5, 3}, {7, 1}, {6, 2}, {0, 8}}));
  EXPECT_EQ(select_closest_cond_frames(8, outputs_at({0, 1, 2, 30}, {}).cond, 3).selected,
            (std::vector<int64_t>{2, 30, 1}));
}

TEST(MemoryBank, StrideTakesTheLastFrameThenEveryStrideth) {
  TrackingConfig config;
  config.memory_temporal_stride_for_eval = 2;
  std::vector<int64_t> tracked;
  for (int64_t t = 1; t < 20; ++t) tracked.push_back(t);
  const ObjectOutputs outputs = outputs_at({0}, tracked);
  const auto forward = chosen(outputs, select_memories(outputs, 11, 40, false, config)).first;
  // t_pos 1 would be frame 0, the cond frame (already taken with t_pos 0).
  EXPECT_EQ(forward, (std::vector<std::pair<int64_t, int>>{{0, 0}, {2, 2}, {4, 3}, {6, 4}, {8, 5}, {10, 6}}));
  const auto reverse = chosen(outputs, select_memories(outputs, 5, 40, true, config)).first;
  EXPECT_EQ(reverse, (std::vector<std::pair<int64_t, int>>{{0, 0}, {16, 1}, {14, 2}, {12, 3}, {10, 4}, {8, 5}, {6, 6}}));
}

TEST(MemoryBank, NoCondFrameIsAnError) {
  EXPECT_THROW(select_memories(outputs_at({}, {1, 2}), 3, 10, false, TrackingConfig{}), Error);
}

}  // namespace
}  // namespace sam2rt
