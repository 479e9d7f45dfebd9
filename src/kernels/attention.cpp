#include "kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/bf16_gemm.h"
#include "kernels/gemm.h"
#include "kernels/softmax.h"

namespace sam2rt {

namespace {

// Queries per block of scores: 256 x 4096 scores (4 MB) for Hiera's global
// attention outgrow the L2, yet the larger GEMMs win: BM_GlobalAttention took
// 145-150 ms against 151-157 ms with 128 (3 alternating runs, Zen 4), and 176
// and 194 ms with 64 and 32; 512 measured as 256.
constexpr int64_t kQueryBlock = 256;

template <class T>
void grow(std::vector<T>& buffer, int64_t size) {
  if (static_cast<int64_t>(buffer.size()) < size) buffer.resize(static_cast<size_t>(size));
}

// Scratch of one thread: a block of scores and of scaled queries, and their
// bfloat16 forms. Kept per thread between calls and only ever grown, so the
// encoder's steady state allocates (and page-faults) nothing here.
struct AttentionScratch {
  std::vector<float> scores, scaled_q, sums;
  std::vector<uint16_t> numerators, q16;

  static AttentionScratch& of_this_thread(const AttentionArgs& a, bool bf16_products) {
    thread_local AttentionScratch scratch;
    const int64_t rows = std::min(kQueryBlock, a.nq);
    grow(scratch.scores, rows * a.nk);
    grow(scratch.scaled_q, rows * a.head_dim);
    grow(scratch.sums, kQueryBlock);
    if (bf16_products) {
      grow(scratch.numerators, rows * a.nk);
      grow(scratch.q16, rows * a.head_dim);
    }
    return scratch;
  }
};

// Keys (as k^T) and values of every head packed for gemm_bf16_packed, head
// after head; one per calling thread, reused (grown) from call to call.
struct PackedKeysValues {
  std::vector<uint16_t> key_pairs, value_pairs;
  int64_t keys_per_head = 0, values_per_head = 0;

  static const PackedKeysValues& of_this_thread(const AttentionArgs& a, bool parallel) {
    thread_local PackedKeysValues instance;
    // The OpenMP workers below must fill THIS thread's instance: named directly,
    // a thread_local would be each worker's own.
    PackedKeysValues& packed = instance;
    packed.keys_per_head = bf16_pairs_size(a.head_dim, a.nk);
    packed.values_per_head = bf16_pairs_size(a.nk, value_width(a));
    grow(packed.key_pairs, a.heads * packed.keys_per_head);
    grow(packed.value_pairs, a.heads * packed.values_per_head);
#pragma omp parallel for schedule(dynamic, 1) if (parallel)
    for (int64_t h = 0; h < a.heads; ++h) {
      pack_bf16_pairs_transposed(a.k + h * a.head_dim, a.ldk, a.head_dim, a.nk,
                                 packed.key_pairs.data() + h * packed.keys_per_head);
      pack_bf16_pairs(a.v + h * value_width(a), a.ldv, a.nk, value_width(a),
                      packed.value_pairs.data() + h * packed.values_per_head);
    }
    return packed;
  }
};

// Head h, queries [q0, q0 + kQueryBlock); both products in bfloat16 when
// `packed` is given.
void attend_block(const AttentionArgs& a, int64_t h, int64_t q0, AttentionScratch& scratch,
                  const PackedKeysValues* packed) {
  const int64_t rows = std::min(kQueryBlock, a.nq - q0), values = value_width(a);
  float* scaled_q = scratch.scaled_q.data();
  float* scores = scratch.scores.data();
  // PyTorch scales q before the product (q * scale) @ k^T.
  for (int64_t i = 0; i < rows; ++i) {
    const float* src = a.q + (q0 + i) * a.ldq + h * a.head_dim;
    for (int64_t d = 0; d < a.head_dim; ++d) scaled_q[i * a.head_dim + d] = src[d] * a.scale;
  }
  if (packed) {
    round_to_bf16(scaled_q, rows * a.head_dim, scratch.q16.data());
    gemm_bf16_packed(scratch.q16.data(), a.head_dim, rows, a.head_dim,
                     packed->key_pairs.data() + h * packed->keys_per_head, a.nk, scores, a.nk);
    // softmax(s) v = (exp(s - max) v) / sum: the division moves after the product.
    exp_rows_to_bf16(scores, rows, a.nk, a.nk, scratch.numerators.data(), a.nk, scratch.sums.data());
    float* out = a.out + q0 * a.ldo + h * values;
    gemm_bf16_packed(scratch.numerators.data(), a.nk, rows, a.nk,
                     packed->value_pairs.data() + h * packed->values_per_head, values, out, a.ldo);
    for (int64_t i = 0; i < rows; ++i) {
      const float inv = 1.0f / scratch.sums[static_cast<size_t>(i)];
      for (int64_t d = 0; d < values; ++d) out[i * a.ldo + d] *= inv;
    }
    return;
  }
  gemm({.m = rows, .n = a.nk, .k = a.head_dim, .a = scaled_q, .lda = a.head_dim, .b = a.k + h * a.head_dim,
        .ldb = a.ldk, .b_transposed = true, .c = scores, .ldc = a.nk});
  softmax_rows(scores, rows, a.nk, a.nk);
  gemm({.m = rows, .n = values, .k = a.nk, .a = scores, .lda = a.nk, .b = a.v + h * values, .ldb = a.ldv,
        .b_transposed = false, .c = a.out + q0 * a.ldo + h * values, .ldc = a.ldo});
}

bool products_in_bf16(const AttentionArgs& a) { return a.bf16_products && bf16_gemm_supported(); }

}  // namespace

void attention(const AttentionArgs& a) {
  const int64_t blocks = (a.nq + kQueryBlock - 1) / kQueryBlock;
  const bool bf16 = products_in_bf16(a);
  const PackedKeysValues* packed = bf16 ? &PackedKeysValues::of_this_thread(a, true) : nullptr;
#pragma omp parallel
  {
    AttentionScratch& scratch = AttentionScratch::of_this_thread(a, bf16);
#pragma omp for collapse(2) schedule(dynamic)
    for (int64_t h = 0; h < a.heads; ++h) {
      for (int64_t blk = 0; blk < blocks; ++blk) attend_block(a, h, blk * kQueryBlock, scratch, packed);
    }
  }
}

void attention_serial(const AttentionArgs& a) {
  const bool bf16 = products_in_bf16(a);
  const PackedKeysValues* packed = bf16 ? &PackedKeysValues::of_this_thread(a, false) : nullptr;
  AttentionScratch& scratch = AttentionScratch::of_this_thread(a, bf16);
  for (int64_t h = 0; h < a.heads; ++h) {
    for (int64_t q0 = 0; q0 < a.nq; q0 += kQueryBlock) attend_block(a, h, q0, scratch, packed);
  }
}

void attention_reference(const AttentionArgs& a) {
  std::vector<double> scores(static_cast<size_t>(a.nk));
  for (int64_t h = 0; h < a.heads; ++h) {
    for (int64_t i = 0; i < a.nq; ++i) {
      const float* q = a.q + i * a.ldq + h * a.head_dim;
      double max = -INFINITY;
      for (int64_t j = 0; j < a.nk; ++j) {
        const float* k = a.k + j * a.ldk + h * a.head_dim;
        double dot = 0.0;
        for (int64_t d = 0; d < a.head_dim; ++d) dot += static_cast<double>(q[d]) * k[d];
        scores[j] = dot * a.scale;
        max = std::max(max, scores[j]);
      }
      double sum = 0.0;
      for (int64_t j = 0; j < a.nk; ++j) sum += (scores[j] = std::exp(scores[j] - max));
      const int64_t values = value_width(a);
      float* out = a.out + i * a.ldo + h * values;
      for (int64_t d = 0; d < values; ++d) {
        double acc = 0.0;
        for (int64_t j = 0; j < a.nk; ++j) acc += scores[j] * a.v[j * a.ldv + h * values + d];
        out[d] = static_cast<float>(acc / sum);
      }
    }
  }
}

}  // namespace sam2rt
