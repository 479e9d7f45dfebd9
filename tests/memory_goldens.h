#pragma once

// The harness's module goldens of the video memory modules
// (tests/video/goldens/modules_{micro,tiny}.safetensors, made by the official
// PyTorch code: tools/refgen/video/module_goldens.py on the video-harness
// branch). Tiny's large maps are stored decimated (key X.decS: X[..., ::S,
// ::S]) and its inputs are regenerated here from their recipes.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "backends/backend.h"
#include "core/tensor.h"
#include "io/checkpoint.h"
#include "io/safetensors.h"
#include "kernels/layout.h"
#include "memory_test_inputs.h"
#include "model/memory_weights.h"
#include "model/synthetic_weights.h"
#include "test_paths.h"

namespace sam2rt::testing {

struct ModuleGoldens {
  ModelConfig config;
  WeightMap weights;
  SafetensorsFile golden;
  int64_t side = 0;
};

inline std::string module_goldens_path(const std::string& name) {
  return std::string(SAM2RT_SOURCE_DIR) + "/tests/video/goldens/modules_" + name + ".safetensors";
}

// micro: the micro fixture's checkpoint; tiny: generated weights, salt 0.
// Empty where the golden file is not there.
inline std::optional<ModuleGoldens> module_goldens(const std::string& name) {
  if (!std::filesystem::exists(module_goldens_path(name))) return std::nullopt;
  ModuleGoldens g;
  g.config = name == "micro" ? micro_config() : preset_config(name);
  g.weights =
      name == "micro" ? load_checkpoint(fixtures_dir() + "/micro/micro.pt") : synthetic_memory_weights(g.config, 0);
  g.golden = read_safetensors(module_goldens_path(name));
  g.side = g.config.image_embedding_size();
  return g;
}

// The harness's recipe(name, shape, scale): the fixture generator's values of
// `name` (salt 0) as float32(v * scale), v in [-1, 1).
inline Tensor recipe(const std::string& name, Shape shape, double scale) {
  Tensor t(std::move(shape));
  const uint64_t seed = fnv1a64(name);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const uint64_t h = splitmix64(seed + static_cast<uint64_t>(i));
    const double v = 2.0 * (static_cast<double>(h >> 11) * 0x1.0p-53) - 1.0;
    t[i] = static_cast<float>(v * scale);
  }
  return t;
}

// [1, C, H, W] or tokens [H*W, 1, C] as channels-last rows [H*W, C].
inline Tensor as_rows(const Tensor& t) {
  if (t.rank() == 4) return nchw_to_hwc(t).reshaped({t.dim(2) * t.dim(3), t.dim(1)});
  return t.reshaped({t.numel() / t.dim(-1), t.dim(-1)});
}

// Largest |rows - golden| over what the golden holds of `key`: the whole map
// (tokens [E*E, 1, C] or [1, C, E, E]) or, decimated, every step-th row and column.
inline double max_abs_error_to_golden(const Tensor& rows, const ModuleGoldens& g, const std::string& key) {
  const auto& tensors = g.golden.tensors;
  std::string stored;
  for (const std::string& candidate : {key, key + ".nchw"}) {
    if (tensors.contains(candidate)) stored = candidate;
  }
  int64_t step = 1;
  for (const auto& [name, tensor] : tensors) {
    for (const std::string& prefix : {key + ".dec", key + ".nchw.dec"}) {
      if (stored.empty() && name.starts_with(prefix) && name.find('.', prefix.size()) == std::string::npos) {
        stored = name;
        step = std::stoll(name.substr(prefix.size()));
      }
    }
  }
  if (stored.empty()) {
    ADD_FAILURE() << "no golden " << key;
    return INFINITY;
  }
  const Tensor& golden = tensors.at(stored);
  const int64_t width = rows.dim(-1), side = g.side;
  double error = 0.0;
  if (golden.rank() == 3) {  // tokens
    EXPECT_EQ(golden.numel(), rows.numel()) << key;
    for (int64_t i = 0; i < std::min(golden.numel(), rows.numel()); ++i) {
      error = std::max(error, std::abs(static_cast<double>(rows[i]) - golden[i]));
    }
    return error;
  }
  const int64_t height = golden.dim(2), columns = golden.dim(3);
  EXPECT_EQ(golden.dim(1), width) << key;
  EXPECT_EQ(height, (side + step - 1) / step) << key;
  for (int64_t c = 0; c < width; ++c) {
    for (int64_t y = 0; y < height; ++y) {
      for (int64_t x = 0; x < columns; ++x) {
        const float actual = rows[((y * step) * side + x * step) * width + c];
        error = std::max(error, std::abs(static_cast<double>(actual) - golden[(c * height + y) * columns + x]));
      }
    }
  }
  return error;
}

// The memory attention on `name`'s module goldens, on `backend`: the memory
// assembled as the official predictor does, then the module with pointers and
// on one frame, each within 1e-4 (memory_attention_test.cpp).
void expect_module_goldens(const std::string& name, const std::shared_ptr<Backend>& backend);

}  // namespace sam2rt::testing
