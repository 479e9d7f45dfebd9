#include "model/object_pointer.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "core/error.h"
#include "kernels/linear.h"

namespace sam2rt {

Tensor sine_pe_1d(const std::vector<float>& positions, int64_t dim, double temperature) {
  const int64_t half = dim / 2;
  // dim_t = temperature ** (2 * (arange(half) // 2) / half), float32.
  std::vector<float> dim_t(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) {
    const float exponent = static_cast<float>(2 * (i / 2)) / static_cast<float>(half);
    dim_t[static_cast<size_t>(i)] = std::pow(static_cast<float>(temperature), exponent);
  }
  Tensor pe({static_cast<int64_t>(positions.size()), dim});
  for (size_t p = 0; p < positions.size(); ++p) {
    float* row = pe.data() + static_cast<int64_t>(p) * dim;
    for (int64_t i = 0; i < half; ++i) {
      const float angle = positions[p] / dim_t[static_cast<size_t>(i)];
      row[i] = std::sin(angle);
      row[half + i] = std::cos(angle);
    }
  }
  return pe;
}

ObjectPointerTokens split_object_pointers(const Tensor& pointers, const Tensor& positions, int64_t mem_dim) {
  const int64_t width = pointers.dim(-1), count = pointers.numel() / width;
  if (mem_dim < 1 || width % mem_dim != 0 || positions.numel() != count * mem_dim) {
    throw Error("object pointers " + shape_to_string(pointers.shape()) + " with positions " +
                shape_to_string(positions.shape()) + " do not split into tokens of " + std::to_string(mem_dim));
  }
  const int64_t per_pointer = width / mem_dim;
  ObjectPointerTokens split{pointers.clone().reshaped({count * per_pointer, mem_dim}),
                            Tensor({count * per_pointer, mem_dim})};
  for (int64_t t = 0; t < count * per_pointer; ++t) {
    std::copy_n(positions.data() + (t / per_pointer) * mem_dim, mem_dim, split.positions.data() + t * mem_dim);
  }
  return split;
}

ObjectPointerHeads::ObjectPointerHeads(const ModelConfig& config, const WeightMap& weights)
    : width_(config.embed_dim()), mem_dim_(config.mem_dim()), num_maskmem_(config.num_maskmem) {
  for (int i = 0; i < 3; ++i) {
    const std::string p = "obj_ptr_proj.layers." + std::to_string(i);
    obj_ptr_proj_.emplace_back(weights.at(p + ".weight"), weights.at(p + ".bias"));
  }
  no_obj_ptr_ = weights.at("no_obj_ptr").reshaped({width_});
  tpos_proj_weight_ = weights.at("obj_ptr_tpos_proj.weight");
  tpos_proj_bias_ = weights.at("obj_ptr_tpos_proj.bias");
  maskmem_tpos_enc_ = weights.at("maskmem_tpos_enc").reshaped({num_maskmem_, mem_dim_});
}

Tensor ObjectPointerHeads::object_pointer(const Tensor& sam_output_token, bool object_appearing) const {
  if (sam_output_token.numel() != width_) {
    throw Error("object pointer: the SAM output token has " + std::to_string(sam_output_token.numel()) +
                " values, expected " + std::to_string(width_));
  }
  Tensor h = sam_output_token.reshaped({1, width_});
  for (size_t i = 0; i < obj_ptr_proj_.size(); ++i) {
    h = linear(h, obj_ptr_proj_[i].first, obj_ptr_proj_[i].second);
    if (i + 1 < obj_ptr_proj_.size()) {
      for (float& v : h) v = std::max(v, 0.0f);
    }
  }
  const float lambda = object_appearing ? 1.0f : 0.0f;
  Tensor pointer({width_});
  for (int64_t i = 0; i < width_; ++i) pointer[i] = lambda * h[i] + (1.0f - lambda) * no_obj_ptr_[i];
  return pointer;
}

Tensor ObjectPointerHeads::pointer_positions(const std::vector<int64_t>& t_diffs, int64_t t_diff_max) const {
  if (t_diff_max < 1) throw Error("object pointer positions need t_diff_max >= 1");
  std::vector<float> normalized;
  normalized.reserve(t_diffs.size());
  // obj_pos / t_diff_max: an integer tensor divided by an integer, true division in float32.
  for (const int64_t t : t_diffs) normalized.push_back(static_cast<float>(t) / static_cast<float>(t_diff_max));
  return linear(sine_pe_1d(normalized, width_), tpos_proj_weight_, tpos_proj_bias_);
}

Tensor ObjectPointerHeads::memory_time_encoding(int64_t t_pos) const {
  if (t_pos < 0 || t_pos >= num_maskmem_) {
    throw Error("memory time encoding: t_pos " + std::to_string(t_pos) + " outside 0.." +
                std::to_string(num_maskmem_ - 1));
  }
  return maskmem_tpos_enc_.rows(num_maskmem_ - t_pos - 1, 1).reshaped({mem_dim_}).clone();
}

}  // namespace sam2rt
