#include "model/memory_attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "backend_op_reference.h"
#include "backends/cpu_backend.h"
#include "core/error.h"
#include "io/checkpoint.h"
#include "kernels/depthwise_conv.h"
#include "kernels/rotary.h"
#include "memory_goldens.h"
#include "memory_reference.h"
#include "memory_test_inputs.h"
#include "model/memory_encoder.h"
#include "model/memory_weights.h"
#include "model/object_pointer.h"
#include "model/position_encoding.h"

namespace sam2rt::testing {
namespace {

double max_abs_error(const Tensor& actual, const Tensor& expected) {
  EXPECT_EQ(actual.numel(), expected.numel());
  double error = 0.0;
  for (int64_t i = 0; i < expected.numel() && i < actual.numel(); ++i) {
    error = std::max(error, std::abs(static_cast<double>(actual[i]) - expected[i]));
  }
  return error;
}

// ---- Kernels ----

TEST(MemoryKernels, RotatePairsRowsMatchesThePlainReference) {
  // Two heads; 3 frames of 20 rows repeating the table, then 8 rows left alone.
  const Tensor x = random_tensor({68, 24}, 601);
  const Tensor angles = random_tensor({20, 6}, 602, 60.0f);
  Tensor table({20, 6, 2});
  for (int64_t i = 0; i < angles.numel(); ++i) {
    table[2 * i] = std::cos(angles[i]);
    table[2 * i + 1] = std::sin(angles[i]);
  }
  Tensor y = x.clone();
  rotate_pairs_rows(y.data(), 60, 24, table.data(), 20, 6);
  EXPECT_LE(max_abs_error(y, reference::rotary_rows(x, 60, table)), 1e-6);
}

TEST(MemoryKernels, DepthwiseConvMatchesThePlainReference) {
  // Tiny's fuser map (64 x 64, 256 channels, 7x7) and an odd one with a 3x3.
  struct Case {
    int64_t height, width, channels, kernel, padding;
  };
  for (const Case c : {Case{64, 64, 256, 7, 3}, Case{5, 9, 3, 3, 1}}) {
    const Tensor x = random_tensor({c.height, c.width, c.channels}, 603);
    const Tensor weight = random_tensor({c.channels, 1, c.kernel, c.kernel}, 604, 0.3f);
    const Tensor bias = random_tensor({c.channels}, 605);
    Tensor y({c.height, c.width, c.channels});
    depthwise_conv2d_hwc(x.data(), c.height, c.width, c.channels, weight.data(), c.kernel, bias.data(), c.padding,
                         y.data());
    EXPECT_LE(max_abs_error(y, reference::depthwise_conv2d_hwc(x, weight, bias, c.padding)), 1e-5);
  }
}

// ---- The rotation table ----

TEST(MemoryAttention, AxialRotationTableIsComputeAxialCis) {
  const int64_t dim = 32, side = 16;
  const Tensor table = axial_rotation_table(dim, side, side, 10000.0);
  ASSERT_EQ(table.shape(), (Shape{side * side, dim / 2, 2}));
  double error = 0.0;
  for (int64_t t = 0; t < side * side; ++t) {
    for (int64_t i = 0; i < dim / 2; ++i) {
      const int64_t j = i % (dim / 4);
      const double position = static_cast<double>(i < dim / 4 ? t % side : t / side);
      const double angle = position / std::pow(10000.0, 4.0 * static_cast<double>(j) / dim);
      error = std::max(error, std::abs(table[(t * dim / 2 + i) * 2] - std::cos(angle)));
      error = std::max(error, std::abs(table[(t * dim / 2 + i) * 2 + 1] - std::sin(angle)));
    }
  }
  EXPECT_LE(error, 1e-5);
}

// ---- The module ----

struct MemoryInputs {
  Tensor curr, curr_pos, memory, memory_pos;
  int64_t pointer_tokens = 0;
};

MemoryInputs memory_inputs(const ModelConfig& config, int64_t frames, int64_t pointer_tokens) {
  const int64_t pixels = config.image_embedding_size() * config.image_embedding_size(), c = config.embed_dim();
  const int64_t m = frames * pixels + pointer_tokens;
  return {random_tensor({pixels, c}, 611), random_tensor({pixels, c}, 612), random_tensor({m, config.mem_dim()}, 613),
          random_tensor({m, config.mem_dim()}, 614), pointer_tokens};
}

void expect_matches_reference(const ModelConfig& config, const WeightMap& weights, int64_t frames,
                              int64_t pointer_tokens) {
  SCOPED_TRACE(std::to_string(frames) + " frames, " + std::to_string(pointer_tokens) + " pointer tokens, " +
               std::to_string(config.memory_attention.self_attention.num_heads) + " heads");
  const MemoryAttention attention(config, weights, std::make_shared<CpuBackend>());
  const MemoryInputs in = memory_inputs(config, frames, pointer_tokens);
  const Tensor out = attention.forward(in.curr, in.curr_pos, in.memory, in.memory_pos, in.pointer_tokens);
  const Tensor expected = memory_reference::memory_attention(config, weights, in.curr, in.curr_pos, in.memory,
                                                             in.memory_pos, in.pointer_tokens);
  EXPECT_LE(max_abs_error(out, expected), 1e-4);
}

TEST(MemoryAttention, MatchesThePlainReferenceOnMicroShapes) {
  const ModelConfig config = micro_config();
  const WeightMap weights = synthetic_memory_weights(config, 0);
  expect_matches_reference(config, weights, 1, 0);
  // 2 frames and 3 pointers of C / mem_dim = 2 tokens each.
  expect_matches_reference(config, weights, 2, 6);
}

TEST(MemoryAttention, MatchesThePlainReferenceOnTheMicroCheckpoint) {
  const ModelConfig config = micro_config();
  expect_matches_reference(config, load_checkpoint(fixtures_dir() + "/micro/micro.pt"), 3, 4);
}

TEST(MemoryAttention, KeepsSeveralHeadsApart) {
  ModelConfig config = micro_config();
  config.memory_attention.self_attention.num_heads = 2;
  config.memory_attention.cross_attention.num_heads = 2;
  expect_matches_reference(config, synthetic_memory_weights(config, 7), 2, 2);
}

TEST(MemoryAttention, RefusesMemoryThatIsNotWholeFramesPlusPointers) {
  const ModelConfig config = micro_config();
  const MemoryAttention attention(config, synthetic_memory_weights(config, 0), std::make_shared<CpuBackend>());
  const MemoryInputs in = memory_inputs(config, 2, 4);
  EXPECT_THROW(attention.forward(in.curr, in.curr_pos, in.memory, in.memory_pos, 3), Error);
  EXPECT_THROW(attention.forward(in.curr, in.curr_pos, in.memory, in.memory_pos, -1), Error);
  EXPECT_THROW(attention.forward(in.curr, in.curr_pos, in.memory.reshaped({-1, 8}), in.memory_pos, 4), Error);
}

// ---- Object pointers ----

TEST(MemoryObjectPointers, SinePe1dIsGet1dSinePe) {
  const std::vector<float> positions = {-1.0f, 0.0f, 0.2f, 1.0f};
  const int64_t dim = 32, half = dim / 2;
  const Tensor pe = sine_pe_1d(positions, dim);
  ASSERT_EQ(pe.shape(), (Shape{4, dim}));
  for (size_t p = 0; p < positions.size(); ++p) {
    for (int64_t i = 0; i < half; ++i) {
      const double angle = positions[p] / std::pow(10000.0, 2.0 * static_cast<double>(i / 2) / half);
      EXPECT_NEAR(pe[static_cast<int64_t>(p) * dim + i], std::sin(angle), 1e-6);
      EXPECT_NEAR(pe[static_cast<int64_t>(p) * dim + half + i], std::cos(angle), 1e-6);
    }
  }
}

TEST(MemoryObjectPointers, SplitsEachPointerIntoConsecutiveTokens) {
  const Tensor pointers = random_tensor({3, 8}, 621), positions = random_tensor({3, 4}, 622);
  const ObjectPointerTokens split = split_object_pointers(pointers, positions, 4);
  ASSERT_EQ(split.tokens.shape(), (Shape{6, 4}));
  ASSERT_EQ(split.positions.shape(), (Shape{6, 4}));
  for (int64_t t = 0; t < 6; ++t) {
    for (int64_t i = 0; i < 4; ++i) {
      EXPECT_EQ(split.tokens[t * 4 + i], pointers[(t / 2) * 8 + (t % 2) * 4 + i]);
      EXPECT_EQ(split.positions[t * 4 + i], positions[(t / 2) * 4 + i]);
    }
  }
  EXPECT_THROW(split_object_pointers(pointers, positions, 3), Error);
}

TEST(MemoryObjectPointers, HeadsMatchThePlainReference) {
  const ModelConfig config = micro_config();
  const WeightMap w = synthetic_memory_weights(config, 0);
  const ObjectPointerHeads heads(config, w);
  const int64_t c = config.embed_dim(), mem = config.mem_dim();
  const Tensor token = random_tensor({c}, 631);
  namespace ref = memory_reference;
  ref::Map h = ref::to_map(token);
  for (int i = 0; i < 3; ++i) {
    const std::string p = "obj_ptr_proj.layers." + std::to_string(i);
    h = ref::linear(h, w.at(p + ".weight"), w.at(p + ".bias"));
    if (i < 2) {
      for (double& v : h) v = std::max(v, 0.0);
    }
  }
  EXPECT_LE(max_abs_error(heads.object_pointer(token, true), ref::to_tensor(h, {c})), 1e-5);
  // Absent: the learned no-object pointer alone (fixed_no_obj_ptr).
  EXPECT_EQ(max_abs_error(heads.object_pointer(token, false), w.at("no_obj_ptr").reshaped({c})), 0.0);

  const std::vector<int64_t> t_diffs = {-2, 1, 5, 15};
  const Tensor positions = heads.pointer_positions(t_diffs, 15);
  ASSERT_EQ(positions.shape(), (Shape{4, mem}));
  for (size_t p = 0; p < t_diffs.size(); ++p) {
    ref::Map pe(static_cast<size_t>(c));
    for (int64_t i = 0; i < c / 2; ++i) {
      const double angle = static_cast<double>(t_diffs[p]) / 15.0 / std::pow(10000.0, 2.0 * (i / 2) / (c / 2.0));
      pe[static_cast<size_t>(i)] = std::sin(angle);
      pe[static_cast<size_t>(c / 2 + i)] = std::cos(angle);
    }
    const Tensor expected =
        ref::to_tensor(ref::linear(pe, w.at("obj_ptr_tpos_proj.weight"), w.at("obj_ptr_tpos_proj.bias")), {mem});
    EXPECT_LE(max_abs_error(positions.rows(static_cast<int64_t>(p), 1).reshaped({mem}), expected), 1e-5);
  }
  // maskmem_tpos_enc[num_maskmem - t_pos - 1]
  const Tensor& table = w.at("maskmem_tpos_enc");
  for (int64_t t_pos = 0; t_pos < config.num_maskmem; ++t_pos) {
    const Tensor row = heads.memory_time_encoding(t_pos);
    for (int64_t i = 0; i < mem; ++i) EXPECT_EQ(row[i], table[(config.num_maskmem - t_pos - 1) * mem + i]);
  }
  EXPECT_THROW(heads.memory_time_encoding(config.num_maskmem), Error);
}

// ---- The module goldens ----

}  // namespace

// The memory as _prepare_memory_conditioned_features builds it, from this
// engine's helpers, on the golden's recipe: a conditioning frame (t_pos 0) and
// the previous frame (t_pos num_maskmem - 1), stored as bfloat16 as the
// predictor stores them, then 3 pointers at signed distances 5, 1, 2 of
// t_diff_max 15, against the golden's memory and memory_pos; then the module
// on them, with the pointers and on the second frame alone, on `backend`.
void expect_module_goldens(const std::string& name, const std::shared_ptr<Backend>& backend) {
  const std::optional<ModuleGoldens> g = module_goldens(name);
  ASSERT_TRUE(g.has_value()) << module_goldens_path(name) << " is missing (tests/video/goldens, committed)";
  const ModelConfig& config = g->config;
  const auto& tensors = g->golden.tensors;
  const int64_t side = g->side, pixels = side * side, c = config.embed_dim(), mem = config.mem_dim();

  const ObjectPointerHeads heads(config, g->weights);
  const Tensor frame_pe = as_rows(sine_position_encoding(mem, side, side, config.memory_encoder.pos_temperature, true));
  const ObjectPointerTokens pointers =
      split_object_pointers(as_rows(tensors.at("ma.obj_ptrs")), heads.pointer_positions({5, 1, 2}, 15), mem);
  const int64_t pointer_tokens = pointers.tokens.dim(0), rows = 2 * pixels + pointer_tokens;
  Tensor memory({rows, mem}), memory_pos({rows, mem});
  for (int64_t frame = 0; frame < 2; ++frame) {
    Tensor features = recipe("video.ma.memory_frame" + std::to_string(frame), {1, mem, side, side}, 2.0);
    round_to_bfloat16_in_place(features);
    const Tensor feature_rows = as_rows(features);
    const Tensor time = heads.memory_time_encoding(frame == 0 ? 0 : config.num_maskmem - 1);
    for (int64_t i = 0; i < pixels * mem; ++i) {
      memory[frame * pixels * mem + i] = feature_rows[i];
      memory_pos[frame * pixels * mem + i] = frame_pe[i] + time[i % mem];
    }
  }
  std::copy(pointers.tokens.begin(), pointers.tokens.end(), memory.data() + 2 * pixels * mem);
  std::copy(pointers.positions.begin(), pointers.positions.end(), memory_pos.data() + 2 * pixels * mem);
  // Against the golden's: whole (micro), or per frame decimated and the pointer rows whole (tiny).
  double memory_error = 0.0, position_error = 0.0;
  if (tensors.contains("ma.memory")) {
    memory_error = max_abs_error(memory, as_rows(tensors.at("ma.memory")));
    position_error = max_abs_error(memory_pos, as_rows(tensors.at("ma.memory_pos")));
  } else {
    for (int64_t frame = 0; frame < 2; ++frame) {
      const std::string suffix = ".frame" + std::to_string(frame);
      memory_error = std::max(memory_error,
                              max_abs_error_to_golden(memory.rows(frame * pixels, pixels), *g, "ma.memory" + suffix));
      position_error = std::max(position_error, max_abs_error_to_golden(memory_pos.rows(frame * pixels, pixels), *g,
                                                                        "ma.memory_pos" + suffix));
    }
    memory_error = std::max(memory_error, max_abs_error(memory.rows(2 * pixels, pointer_tokens),
                                                        as_rows(tensors.at("ma.memory.ptr_rows"))));
    position_error = std::max(position_error, max_abs_error(memory_pos.rows(2 * pixels, pointer_tokens),
                                                            as_rows(tensors.at("ma.memory_pos.ptr_rows"))));
  }
  // The bfloat16 frames and the split pointers are copies: bit for bit.
  EXPECT_EQ(memory_error, 0.0);
  EXPECT_LE(position_error, 1e-5);

  // curr: the neck's level 2; curr_pos: the neck's sine encoding of it.
  const Tensor curr =
      tensors.contains("ma.curr")
          ? as_rows(tensors.at("ma.curr"))
          : as_rows(read_safetensors(fixtures_dir() + "/" + name + "/golden.safetensors").tensors.at("neck.level2"));
  const Tensor curr_pos = as_rows(sine_position_encoding(c, side, side, config.neck.pos_temperature, true));
  EXPECT_LE(max_abs_error_to_golden(curr_pos, *g, "ma.curr_pos"), 1e-6);

  const MemoryAttention attention(config, g->weights, backend);
  const Tensor with_pointers = attention.forward(curr, curr_pos, memory, memory_pos, pointer_tokens);
  const Tensor second_frame = memory.rows(pixels, pixels), second_frame_pos = memory_pos.rows(pixels, pixels);
  const Tensor one_frame = attention.forward(curr, curr_pos, second_frame, second_frame_pos, 0);
  const double pointers_error = max_abs_error_to_golden(with_pointers, *g, "ma.ptrs.out");
  const double one_frame_error = max_abs_error_to_golden(one_frame, *g, "ma.one_frame.out");
  EXPECT_LE(pointers_error, 1e-4);
  EXPECT_LE(one_frame_error, 1e-4);
  std::cout << name << " on " << backend->description() << " max abs errors: memory_pos assembly " << position_error << ", with pointers " << pointers_error
            << ", one frame " << one_frame_error << "\n";
}

namespace {


TEST(MemoryAttention, MatchesTheMicroModuleGoldens) { expect_module_goldens("micro", std::make_shared<CpuBackend>()); }

TEST(MemoryAttention, MatchesTheTinyModuleGoldens) { expect_module_goldens("tiny", std::make_shared<CpuBackend>()); }


// obj_ptr_proj, the no-object pointer and the pointers' temporal encodings at
// signed distances over t_diff_max 15 and 7.
void expect_pointer_goldens(const std::string& name) {
  const std::optional<ModuleGoldens> g = module_goldens(name);
  ASSERT_TRUE(g.has_value()) << module_goldens_path(name) << " is missing (tests/video/goldens, committed)";
  const auto& tensors = g->golden.tensors;
  const int64_t c = g->config.embed_dim();
  const ObjectPointerHeads heads(g->config, g->weights);
  const Tensor& token = tensors.at("ptr.token");
  const double projection_error = max_abs_error(heads.object_pointer(token, true), tensors.at("ptr.obj_ptr_proj"));
  EXPECT_LE(projection_error, 1e-5);
  const Tensor absent = heads.object_pointer(token, false);
  EXPECT_EQ(std::memcmp(absent.data(), tensors.at("ptr.no_obj_ptr").data(), sizeof(float) * c), 0);
  const std::vector<int64_t> signed_distances = {-15, -7, -3, -1, 0, 1, 2, 3, 6, 7, 15};
  double sine_error = 0.0, projected_error = 0.0;
  for (const int64_t t_diff_max : {15, 7}) {
    std::vector<float> normalized;
    for (const int64_t t : signed_distances) {
      normalized.push_back(static_cast<float>(t) / static_cast<float>(t_diff_max));
    }
    const std::string key = "tpos.tdm" + std::to_string(t_diff_max);
    sine_error = std::max(sine_error, max_abs_error(sine_pe_1d(normalized, c), tensors.at(key + ".sine")));
    projected_error = std::max(projected_error, max_abs_error(heads.pointer_positions(signed_distances, t_diff_max),
                                                              tensors.at(key + ".proj")));
  }
  EXPECT_LE(sine_error, 1e-6);
  EXPECT_LE(projected_error, 1e-5);
  std::cout << name << " max abs errors: obj_ptr_proj " << projection_error << ", 1d sine pe " << sine_error
            << ", tpos proj " << projected_error << "\n";
}

TEST(MemoryObjectPointers, MatchTheMicroModuleGoldens) { expect_pointer_goldens("micro"); }

TEST(MemoryObjectPointers, MatchTheTinyModuleGoldens) { expect_pointer_goldens("tiny"); }

}  // namespace
}  // namespace sam2rt::testing
