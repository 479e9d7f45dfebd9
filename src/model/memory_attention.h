#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backends/backend.h"
#include "core/tensor.h"
#include "core/weights.h"
#include "model/config.h"

namespace sam2rt {

// compute_axial_cis (position_encoding.py) as a rotation table for
// Backend::rotary_rows: [end_x * end_y, dim / 2, 2] of (cos, sin), row t the
// grid position (x = t % end_x, y = t / end_x), its first dim / 4 angles
// x * freq_j and its last dim / 4 y * freq_j, freq_j = 1 / theta^(4j / dim),
// all in float32 as the official code computes them.
Tensor axial_rotation_table(int64_t dim, int64_t end_x, int64_t end_y, double theta);

// memory_attention.* of SAM 2.1 (MemoryAttention with its MemoryAttentionLayers),
// written against a Backend in the official order of operations: the input
// plus 0.1 * its position encoding, then per layer
//   x += self_attn(norm1(x))                (RoPE on q and k, no position added)
//   x += cross_attn(q = norm2(x), k = memory + memory_pos, v = memory)
//        (RoPE on q and on every memory frame's keys, each frame's rows taking
//         the query grid's positions; the object-pointer tokens unrotated)
//   x += linear2(relu(linear1(norm3(x))))
// and the final LayerNorm. Attention is softmax(q k^T / sqrt(head_dim)) v with
// the config's heads (1 in every official config). Thread-safe: a forward holds
// the backend's run_mutex().
class MemoryAttention {
 public:
  // Weights are made resident here; Error for a config the video path does not take.
  MemoryAttention(const ModelConfig& config, const WeightMap& weights, std::shared_ptr<Backend> backend);
  ~MemoryAttention();

  // curr: the frame's top-level feature rows [E*E, C] (or [E, E, C]) on this
  // backend, the FPN neck's level 2 without no_mem_embed; curr_pos: its
  // position encoding [E*E, C] (the neck's level-2 vision_pos_enc,
  // channels-last); memory and memory_pos [M, mem_dim]: the memory frames'
  // rows (E*E each), then the num_obj_ptr_tokens object-pointer tokens, as
  // _prepare_memory_conditioned_features concatenates them. Writes
  // pix_feat_with_mem, [E*E, C] rows, into `out` (a tensor of this backend of
  // E*E*C elements: persistent to outlive other programs on a device).
  // Error naming a wrong shape, or memory rows before the pointers that are not
  // whole frames.
  void forward(const DeviceTensor& curr, const Tensor& curr_pos, const Tensor& memory, const Tensor& memory_pos,
               int64_t num_obj_ptr_tokens, DeviceTensor& out) const;
  // The same from host rows, returning host rows [E*E, C].
  Tensor forward(const Tensor& curr, const Tensor& curr_pos, const Tensor& memory, const Tensor& memory_pos,
                 int64_t num_obj_ptr_tokens) const;

 private:
  struct RopeAttention;
  struct Layer;

  // One RoPEAttention: q_in [nq, C] against k_in, v_in [nk, kv_in_dim], the
  // first `rotated_keys` keys rotated; its output projection added onto x.
  // forward, the caller holding the backend's run_mutex().
  void forward_locked(const DeviceTensor& curr, const Tensor& curr_pos, const Tensor& memory, const Tensor& memory_pos,
                      int64_t num_obj_ptr_tokens, DeviceTensor& out) const;
  void attend_onto(const RopeAttention& attention, const DeviceTensor& q_in, const DeviceTensor& k_in,
                   const DeviceTensor& v_in, int64_t rotated_keys, DeviceTensor& x) const;

  ModelConfig config_;
  std::shared_ptr<Backend> backend_;  // declared first: destroyed after everything resident on it
  std::vector<Layer> layers_;
  DeviceTensor norm_weight_, norm_bias_;
};

}  // namespace sam2rt
