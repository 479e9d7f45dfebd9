#include "model/memory_attention.h"

#include <cmath>
#include <mutex>
#include <string>
#include <utility>

#include "core/error.h"

namespace sam2rt {

namespace {

constexpr float kLayerNormEps = 1e-5f;       // nn.LayerNorm's default, as MemoryAttention(Layer) uses
constexpr float kInputPositionScale = 0.1f;  // MemoryAttention: curr + 0.1 * curr_pos

LinearHandle load_linear(Backend& backend, const WeightMap& weights, const std::string& prefix) {
  return backend.linear(weights.at(prefix + ".weight"), weights.at(prefix + ".bias"), Precision::fp32);
}

}  // namespace

Tensor axial_rotation_table(int64_t dim, int64_t end_x, int64_t end_y, double theta) {
  const int64_t quarter = dim / 4, positions = end_x * end_y;
  // freqs = 1 / theta ** (arange(0, dim, 4)[:dim // 4].float() / dim), in float32.
  std::vector<float> freqs(static_cast<size_t>(quarter));
  for (int64_t j = 0; j < quarter; ++j) {
    const float exponent = static_cast<float>(4 * j) / static_cast<float>(dim);
    freqs[static_cast<size_t>(j)] = 1.0f / std::pow(static_cast<float>(theta), exponent);
  }
  Tensor table({positions, 2 * quarter, 2});
  for (int64_t t = 0; t < positions; ++t) {
    const float x = static_cast<float>(t % end_x), y = static_cast<float>(t / end_x);
    float* row = table.data() + t * 4 * quarter;
    for (int64_t j = 0; j < quarter; ++j) {
      const float angle_x = x * freqs[static_cast<size_t>(j)], angle_y = y * freqs[static_cast<size_t>(j)];
      row[2 * j] = std::cos(angle_x);
      row[2 * j + 1] = std::sin(angle_x);
      row[2 * (quarter + j)] = std::cos(angle_y);
      row[2 * (quarter + j) + 1] = std::sin(angle_y);
    }
  }
  return table;
}

// RoPEAttention: q/k/v projections (k and v from kv_in_dim), RoPE, multi-head
// attention, out projection.
struct MemoryAttention::RopeAttention {
  LinearHandle q_proj, k_proj, v_proj, out_proj;
  int64_t heads = 1;
  DeviceTensor rotation;  // [E*E, head_dim / 2, 2]
};

struct MemoryAttention::Layer {
  RopeAttention self_attn, cross_attn;
  DeviceTensor norm1_weight, norm1_bias, norm2_weight, norm2_bias, norm3_weight, norm3_bias;
  LinearHandle linear1, linear2;
};

MemoryAttention::MemoryAttention(const ModelConfig& config, const WeightMap& weights, std::shared_ptr<Backend> backend)
    : config_(config), backend_(std::move(backend)) {
  validate_memory_config(config_);
  Backend& b = *backend_;
  const MemoryAttentionConfig& m = config_.memory_attention;
  const int64_t side = config_.image_embedding_size();
  std::lock_guard lock(b.run_mutex());
  // The official RoPEAttention recomputes its table for the queries' grid
  // (sqrt(N) x sqrt(N)) whenever feat_sizes do not match it: the features'
  // E x E grid either way.
  auto rope_attention = [&](const std::string& prefix, const RopeAttentionConfig& r) {
    RopeAttention attention{load_linear(b, weights, prefix + ".q_proj"),
                            load_linear(b, weights, prefix + ".k_proj"),
                            load_linear(b, weights, prefix + ".v_proj"),
                            load_linear(b, weights, prefix + ".out_proj"),
                            r.num_heads,
                            {}};
    const int64_t head_dim = attention.q_proj.out_features / r.num_heads;
    attention.rotation = b.constant(axial_rotation_table(head_dim, side, side, r.rope_theta));
    return attention;
  };
  auto norm = [&](const std::string& prefix, const char* which) {
    return b.constant(weights.at(prefix + "." + which));
  };
  for (int i = 0; i < m.num_layers; ++i) {
    const std::string p = "memory_attention.layers." + std::to_string(i);
    layers_.push_back({rope_attention(p + ".self_attn", m.self_attention),
                       rope_attention(p + ".cross_attn_image", m.cross_attention), norm(p + ".norm1", "weight"),
                       norm(p + ".norm1", "bias"), norm(p + ".norm2", "weight"), norm(p + ".norm2", "bias"),
                       norm(p + ".norm3", "weight"), norm(p + ".norm3", "bias"),
                       load_linear(b, weights, p + ".linear1"), load_linear(b, weights, p + ".linear2")});
  }
  norm_weight_ = norm("memory_attention.norm", "weight");
  norm_bias_ = norm("memory_attention.norm", "bias");
}

MemoryAttention::~MemoryAttention() = default;

void MemoryAttention::attend_onto(const RopeAttention& attention, const DeviceTensor& q_in, const DeviceTensor& k_in,
                                  const DeviceTensor& v_in, int64_t rotated_keys, DeviceTensor& x) const {
  Backend& b = *backend_;
  const int64_t nq = q_in.dim(0), nk = k_in.dim(0), width = attention.q_proj.out_features;
  const int64_t head_dim = width / attention.heads, value_in = attention.v_proj.in_features;
  DeviceTensor q = b.tensor({nq, width}), k = b.tensor({nk, width});
  b.linear_forward(attention.q_proj, q_in, nq, q, Epilogue::none);
  b.linear_forward(attention.k_proj, k_in, nk, k, Epilogue::none);
  b.rotary_rows(q, nq, attention.rotation);
  if (rotated_keys > 0) b.rotary_rows(k, rotated_keys, attention.rotation);
  AttentionOperands operands;
  operands.nq = nq;
  operands.nk = nk;
  operands.heads = attention.heads;
  operands.head_dim = head_dim;
  operands.q = q;
  operands.k = k;
  operands.ldq = operands.ldk = width;
  operands.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)));
  DeviceTensor mixed = b.tensor({nq, width});
  // One head mixes the values before their projection where they are
  // narrower (the cross-attention's memory: 64 channels against Tiny's
  // 256): softmax(s) (v Wv^T + bv) = (softmax(s) v) Wv^T + bv, as each row
  // of probabilities sums to one; the mixing's GEMM shrinks by the ratio.
  AttentionOperands narrow = operands;
  narrow.value_dim = value_in;
  narrow.ldv = narrow.ldo = value_in;
  if (attention.heads == 1 && value_in < width && b.supports_attention(narrow)) {
    DeviceTensor mixed_values = b.tensor({nq, value_in});
    narrow.v = v_in;
    narrow.out = mixed_values;
    b.attention(narrow);
    b.linear_forward(attention.v_proj, mixed_values, nq, mixed, Epilogue::none);
  } else {
    DeviceTensor v = b.tensor({nk, width});
    b.linear_forward(attention.v_proj, v_in, nk, v, Epilogue::none);
    operands.v = v;
    operands.out = mixed;
    operands.ldv = operands.ldo = width;
    b.attention(operands);
  }
  b.linear_forward(attention.out_proj, mixed, nq, x, Epilogue::accumulate);
}

void MemoryAttention::forward(const DeviceTensor& curr, const Tensor& curr_pos, const Tensor& memory,
                              const Tensor& memory_pos, int64_t num_obj_ptr_tokens, DeviceTensor& out) const {
  std::lock_guard lock(backend_->run_mutex());
  forward_locked(curr, curr_pos, memory, memory_pos, num_obj_ptr_tokens, out);
}

Tensor MemoryAttention::forward(const Tensor& curr, const Tensor& curr_pos, const Tensor& memory,
                                const Tensor& memory_pos, int64_t num_obj_ptr_tokens) const {
  const int64_t side = config_.image_embedding_size(), c = config_.embed_dim();
  // Uploaded, run and downloaded under one lock: no other program's scratch overwrites them in between.
  std::lock_guard lock(backend_->run_mutex());
  DeviceTensor out = backend_->tensor({side * side, c});
  forward_locked(backend_->input(curr), curr_pos, memory, memory_pos, num_obj_ptr_tokens, out);
  return backend_->download(out).clone();
}

void MemoryAttention::forward_locked(const DeviceTensor& curr, const Tensor& curr_pos, const Tensor& memory,
                                     const Tensor& memory_pos, int64_t num_obj_ptr_tokens, DeviceTensor& out) const {
  const int64_t side = config_.image_embedding_size(), pixels = side * side, c = config_.embed_dim();
  const int64_t mem_dim = config_.mem_dim();
  auto check_rows = [](const char* name, int64_t numel, int64_t last, int64_t rows, int64_t width, const Shape& shape) {
    if (numel != rows * width || last != width) {
      throw Error(std::string("memory attention: ") + name + " has shape " + shape_to_string(shape) + ", expected " +
                  shape_to_string({rows, width}));
    }
  };
  check_rows("curr", curr.numel(), curr.dim(-1), pixels, c, curr.shape());
  check_rows("curr_pos", curr_pos.numel(), curr_pos.dim(-1), pixels, c, curr_pos.shape());
  check_rows("out", out.numel(), out.dim(-1), pixels, c, out.shape());
  const int64_t m = memory.numel() / mem_dim;
  check_rows("memory", memory.numel(), memory.dim(-1), m, mem_dim, memory.shape());
  check_rows("memory_pos", memory_pos.numel(), memory_pos.dim(-1), m, mem_dim, memory_pos.shape());
  const int64_t rotated_keys = m - num_obj_ptr_tokens;
  // rope_k_repeat: the query grid's frequencies repeated once per memory frame.
  if (m < 1 || num_obj_ptr_tokens < 0 || rotated_keys < 0 || rotated_keys % pixels != 0) {
    throw Error("memory attention: " + std::to_string(m) + " memory rows with " + std::to_string(num_obj_ptr_tokens) +
                " object-pointer tokens are not whole frames of " + std::to_string(pixels) + " rows plus the pointers");
  }
  // output = curr + 0.1 * curr_pos (pos_enc_at_input), the scaling in float32 as torch's.
  Tensor scaled_pos(Shape{pixels, c});
  for (int64_t i = 0; i < scaled_pos.numel(); ++i) scaled_pos[i] = kInputPositionScale * curr_pos[i];

  Backend& b = *backend_;
  const DeviceTensor position = b.input(scaled_pos), memory_rows = b.input(memory.reshaped({m, mem_dim})),
                     memory_position = b.input(memory_pos.reshaped({m, mem_dim}));
  run_once(b, [&] {
    DeviceTensor x = b.tensor({pixels, c});
    b.add(curr, position, x);
    // k = memory + memory_pos (pos_enc_at_cross_attn_keys), v = memory.
    DeviceTensor keys = b.tensor({m, mem_dim});
    b.add(memory_rows, memory_position, keys);
    DeviceTensor normed = b.tensor({pixels, c});
    for (const Layer& layer : layers_) {
      b.layer_norm_rows(x, layer.norm1_weight, layer.norm1_bias, kLayerNormEps, normed);
      attend_onto(layer.self_attn, normed, normed, normed, pixels, x);
      b.layer_norm_rows(x, layer.norm2_weight, layer.norm2_bias, kLayerNormEps, normed);
      attend_onto(layer.cross_attn, normed, keys, memory_rows, rotated_keys, x);
      b.layer_norm_rows(x, layer.norm3_weight, layer.norm3_bias, kLayerNormEps, normed);
      DeviceTensor hidden = b.tensor({pixels, layer.linear1.out_features});
      b.linear_forward(layer.linear1, normed, pixels, hidden, Epilogue::relu);
      b.linear_forward(layer.linear2, hidden, pixels, x, Epilogue::accumulate);
    }
    b.layer_norm_rows(x, norm_weight_, norm_bias_, kLayerNormEps, out);
  });
}

}  // namespace sam2rt
