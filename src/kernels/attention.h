#pragma once

#include <cstdint>

namespace sam2rt {

// Multi-head scaled dot-product attention for one sequence:
//   out[i, h*V:(h+1)*V] = softmax(q_h[i] . k_h^T * scale) v_h
// q/k: [nq|nk, heads*D] with row strides ldq/ldk, v: [nk, heads*V] with stride
// ldv, out: [nq, heads*V] with stride ldo; V = value_dim, or D when 0 (values
// narrower than the keys: a caller that applies the value projection after
// the mixing). Queries are processed in blocks, so the full nq x nk score
// matrix is never held at once.
struct AttentionArgs {
  int64_t nq = 0, nk = 0, heads = 1, head_dim = 0;
  int64_t value_dim = 0;
  const float* q = nullptr;
  int64_t ldq = 0;
  const float* k = nullptr;
  int64_t ldk = 0;
  const float* v = nullptr;
  int64_t ldv = 0;
  float* out = nullptr;
  int64_t ldo = 0;
  float scale = 1.0f;
  // Both products, q k^T and probabilities times v, in bfloat16 (operands
  // rounded to nearest even, float32 accumulation and softmax) where the CPU
  // has AVX512_BF16; float32 elsewhere.
  bool bf16_products = false;
};

void attention(const AttentionArgs& args);

// V: args.value_dim, or head_dim when that is 0.
inline int64_t value_width(const AttentionArgs& args) { return args.value_dim > 0 ? args.value_dim : args.head_dim; }

// The same on the calling thread only, for callers that already parallelise
// over many small sequences (windows).
void attention_serial(const AttentionArgs& args);

// Plain double-precision reference the fast path is tested against.
void attention_reference(const AttentionArgs& args);

}  // namespace sam2rt
