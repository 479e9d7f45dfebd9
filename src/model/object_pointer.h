#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "core/weights.h"
#include "model/config.h"

namespace sam2rt {

// get_1d_sine_pe (sam2_utils.py) of each position: [P, dim], per row the sines
// of position / temperature^(2 floor(i/2) / (dim/2)) for i < dim/2, then their
// cosines, in float32 as the official code.
Tensor sine_pe_1d(const std::vector<float>& positions, int64_t dim, double temperature = 10000.0);

// Object-pointer tokens as the memory attention reads them: each pointer [C]
// split into C / mem_dim tokens of mem_dim (consecutive pieces), each with its
// pointer's position row (repeat_interleave), as
// _prepare_memory_conditioned_features does when mem_dim < C.
struct ObjectPointerTokens {
  Tensor tokens;     // [P * C / mem_dim, mem_dim]
  Tensor positions;  // the same shape
};
// pointers [P, C], positions [P, mem_dim].
ObjectPointerTokens split_object_pointers(const Tensor& pointers, const Tensor& positions, int64_t mem_dim);

// SAM2Base's small video-path heads, on the host (a few hundred floats):
// obj_ptr_proj (a 3-layer MLP with ReLU), the no-object pointer, the
// pointers' temporal encoding (obj_ptr_tpos_proj of get_1d_sine_pe) and the
// memories' maskmem_tpos_enc.
class ObjectPointerHeads {
 public:
  ObjectPointerHeads(const ModelConfig& config, const WeightMap& weights);

  // The object pointer of a frame from its SAM output token [C] (the mask
  // token of the chosen mask), as _forward_sam_heads: obj_ptr_proj(token),
  // then with fixed_no_obj_ptr lambda * ptr + (1 - lambda) * no_obj_ptr,
  // lambda = 1 where the object appears (score logit > 0), else 0. [C]
  Tensor object_pointer(const Tensor& sam_output_token, bool object_appearing) const;

  // The temporal position rows of pointers at the given frame distances
  // (signed, as use_signed_tpos_enc_to_obj_ptrs): obj_ptr_tpos_proj(
  // get_1d_sine_pe(t_diff / t_diff_max, C)), t_diff_max = max_obj_ptrs_in_encoder - 1
  // less where the video is shorter (the caller's min(num_frames, max) - 1). [P, mem_dim]
  Tensor pointer_positions(const std::vector<int64_t>& t_diffs, int64_t t_diff_max) const;

  // maskmem_tpos_enc[num_maskmem - t_pos - 1], the temporal encoding added to
  // the position rows of a memory at t_pos (0: a conditioning frame, 1..
  // num_maskmem - 1: that many frames closer to the current one). [mem_dim]
  Tensor memory_time_encoding(int64_t t_pos) const;

  // no_obj_ptr [C]: the pointer of a frame where the object is absent.
  const Tensor& no_object_pointer() const { return no_obj_ptr_; }

 private:
  int64_t width_, mem_dim_, num_maskmem_;
  std::vector<std::pair<Tensor, Tensor>> obj_ptr_proj_;  // (weight, bias) per layer
  Tensor no_obj_ptr_;                                    // [C]
  Tensor tpos_proj_weight_, tpos_proj_bias_;             // [mem_dim, C], [mem_dim]
  Tensor maskmem_tpos_enc_;                              // [num_maskmem, mem_dim]
};

}  // namespace sam2rt
