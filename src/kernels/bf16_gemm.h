#pragma once

#include <cstdint>

namespace sam2rt {

// A small bfloat16 GEMM for attention's probability-times-values product, built
// on AVX512_BF16's pair dot product (vdpbf16ps): C[m, n] = A[m, k] B[k, n] with A
// in bfloat16 and B pre-packed, float32 accumulation and output.
//
// B is packed as pairs along k: packed[(p * n_padded + j) * 2 + e] = B[2p + e, j],
// with k rounded up to even and n up to a multiple of 16, the padding zero.

// True when this CPU has AVX512_BF16 (the only path: callers keep a float32 one).
bool bf16_gemm_supported();

// dst[i] = bfloat16(src[i]), round to nearest even, on the calling thread.
// Needs bf16_gemm_supported().
void round_to_bf16(const float* src, int64_t count, uint16_t* dst);

int64_t bf16_pairs_padded_n(int64_t n);
// Elements (uint16_t) of the packed form of a k x n matrix.
int64_t bf16_pairs_size(int64_t k, int64_t n);
// b [k, n] float32 with row stride ldb -> packed bfloat16 (round to nearest even).
// Needs bf16_gemm_supported(), like everything below.
void pack_bf16_pairs(const float* b, int64_t ldb, int64_t k, int64_t n, uint16_t* packed);

// The same packing of b given as its transpose bt [n, k] (row stride ldbt): the
// keys of attention's scores, whose pairs along k are neighbours in a row.
void pack_bf16_pairs_transposed(const float* bt, int64_t ldbt, int64_t k, int64_t n, uint16_t* packed);

// c[m, n] (row stride ldc) = a[m, k] (bfloat16, row stride lda; exactly k values
// of each row are read) times the packed b. Needs bf16_gemm_supported().
void gemm_bf16_packed(const uint16_t* a, int64_t lda, int64_t m, int64_t k, const uint16_t* packed_b, int64_t n,
                      float* c, int64_t ldc);

}  // namespace sam2rt
