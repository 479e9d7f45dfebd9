#pragma once

#include <cstdint>

namespace sam2rt {

// Multi-head scaled dot-product attention for one sequence:
//   out[i, h*D:(h+1)*D] = softmax(q_h[i] . k_h^T * scale) v_h
// q: [nq, heads*D] with row stride ldq, k/v: [nk, heads*D] with strides ldk/ldv,
// out: [nq, heads*D] with stride ldo. Queries are processed in blocks, so the
// full nq x nk score matrix is never held at once.
struct AttentionArgs {
  int64_t nq = 0, nk = 0, heads = 1, head_dim = 0;
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

// The same on the calling thread only, for callers that already parallelise
// over many small sequences (windows).
void attention_serial(const AttentionArgs& args);

// Plain double-precision reference the fast path is tested against.
void attention_reference(const AttentionArgs& args);

}  // namespace sam2rt
