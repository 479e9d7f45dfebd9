#include "kernels/decoder/head_products.h"

#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "kernels/gemm.h"
#include "kernels/simd_dispatch.h"

namespace sam2rt {

namespace {

// Every SAM 2.1 decoder has attention heads of 16 channels; a head meets 8
// tokens for a one-point or box prompt (what segment-everything runs), and in
// the final attention 1 (the IoU token) or 5 (the object score and mask tokens).
constexpr int64_t kFastHeadDim = 16, kMaxFastPerHead = 8;

// The shapes the vectorised paths serve; any other goes to the per-head GEMMs.
// head_weighted_sums at AVX-512 takes two heads per register (an even count of
// heads), AVX2 one; head_dots takes one head per 8-lane register at both (see
// its kernel).
bool fast_shape(int64_t head_dim, int64_t per_head) {
  return head_dim == kFastHeadDim && per_head >= 1 && per_head <= kMaxFastPerHead;
}

// Calls kernel.template operator()<P>() with the compile-time P = per_head
// (1..kMaxFastPerHead), so that the kernels' accumulators stay in registers.
template <typename Kernel>
void with_per_head(int64_t per_head, Kernel kernel) {
  switch (per_head) {
    case 1: return kernel.template operator()<1>();
    case 2: return kernel.template operator()<2>();
    case 3: return kernel.template operator()<3>();
    case 4: return kernel.template operator()<4>();
    case 5: return kernel.template operator()<5>();
    case 6: return kernel.template operator()<6>();
    case 7: return kernel.template operator()<7>();
    default: return kernel.template operator()<8>();
  }
}

// Two heads at a time: 2 * PerHead accumulators of 16 channels (head h's
// outputs, then head h + 1's), each row adding its x slices (times its row
// scale) times its weights, each weight broadcast straight from memory into its
// FMA: a register spilled to the stack and reloaded lane by lane stalls on
// store forwarding.
template <int PerHead>
[[gnu::target("avx512f")]] void head_weighted_sums_two_heads_avx512(const HeadWeightedSumsArgs& a) {
  for (int64_t h = 0; h < a.heads; h += 2) {
    __m512 acc[2 * PerHead];
    for (__m512& v : acc) v = _mm512_setzero_ps();
    for (int64_t i = 0; i < a.rows; ++i) {
      const float* x = a.x + i * a.ldx + h * kFastHeadDim;
      __m512 head0 = _mm512_loadu_ps(x), head1 = _mm512_loadu_ps(x + kFastHeadDim);
      if (a.row_scale != nullptr) {
        const __m512 scale = _mm512_set1_ps(a.row_scale[i]);
        head0 = _mm512_mul_ps(head0, scale);
        head1 = _mm512_mul_ps(head1, scale);
      }
      const float* w = a.w + i * a.ldw + h * PerHead;
      for (int j = 0; j < PerHead; ++j) {
        acc[j] = _mm512_fmadd_ps(_mm512_set1_ps(w[j]), head0, acc[j]);
        acc[PerHead + j] = _mm512_fmadd_ps(_mm512_set1_ps(w[PerHead + j]), head1, acc[PerHead + j]);
      }
    }
    for (int64_t k = 0; k < 2; ++k)
      for (int64_t j = 0; j < PerHead; ++j) {
        float* out = a.out + j * a.ldo + (h + k) * kFastHeadDim;
        _mm512_storeu_ps(out, _mm512_add_ps(_mm512_loadu_ps(out), acc[k * PerHead + j]));
      }
  }
}

// The first Lanes lanes of v to out.
template <int Lanes>
[[gnu::target("avx2,fma")]] inline void store_lanes(float* out, __m256 v) {
  if constexpr (Lanes == kMaxFastPerHead) {
    _mm256_storeu_ps(out, v);
  } else {
    alignas(32) float lanes[kMaxFastPerHead];
    _mm256_store_ps(lanes, v);
    std::copy_n(lanes, Lanes, out);
  }
}

// One head per 8-lane register: lane j holds the row's dot with the head's
// vector j (lanes from PerHead on are zero and not stored), accumulated over d
// as a multiply, then FMAs. The row's component d is broadcast from memory; the
// transposed vectors are loaded once per d for eight rows, whose eight chains of
// dependent FMAs cover the FMA latency on both pipes. This serves AVX-512 too:
// two heads per 16-lane register need a permute per FMA, which took 9.4 us
// against this kernel's 6.9 on a Zen 4 (BM_DecoderHeadDots; no difference
// measured inside the batched decoder). The loop over d is unrolled: its
// counter and branch cost ~25% of the time here.
template <int PerHead>
[[gnu::target("avx2,fma")]] void head_dots_one_head_avx2(const HeadDotsArgs& a) {
  // vt[h][d] = vectors[h, :, d] as 8 lanes, zero beyond PerHead.
  alignas(32) float vt[64][kFastHeadDim][kMaxFastPerHead];
  for (int64_t h = 0; h < a.heads; ++h)
    for (int64_t d = 0; d < kFastHeadDim; ++d)
      for (int64_t j = 0; j < kMaxFastPerHead; ++j) {
        vt[h][d][j] = j < PerHead ? a.vectors[(h * PerHead + j) * kFastHeadDim + d] : 0.0f;
      }
  constexpr int64_t kRowsInFlight = 8;
  int64_t i = 0;
  for (; i + kRowsInFlight <= a.rows; i += kRowsInFlight) {
    for (int64_t h = 0; h < a.heads; ++h) {
      const float* x = a.x + i * a.ldx + h * kFastHeadDim;
      __m256 acc[kRowsInFlight];
      const __m256 v0 = _mm256_load_ps(vt[h][0]);
      for (int64_t k = 0; k < kRowsInFlight; ++k) acc[k] = _mm256_mul_ps(_mm256_broadcast_ss(x + k * a.ldx), v0);
#pragma GCC unroll 16
      for (int d = 1; d < kFastHeadDim; ++d) {
        const __m256 v = _mm256_load_ps(vt[h][d]);
        for (int64_t k = 0; k < kRowsInFlight; ++k) {
          acc[k] = _mm256_fmadd_ps(_mm256_broadcast_ss(x + k * a.ldx + d), v, acc[k]);
        }
      }
      for (int64_t k = 0; k < kRowsInFlight; ++k) store_lanes<PerHead>(a.out + (i + k) * a.ldo + h * PerHead, acc[k]);
    }
  }
  for (; i < a.rows; ++i) {
    for (int64_t h = 0; h < a.heads; ++h) {
      const float* x = a.x + i * a.ldx + h * kFastHeadDim;
      __m256 acc = _mm256_mul_ps(_mm256_broadcast_ss(x), _mm256_load_ps(vt[h][0]));
      for (int d = 1; d < kFastHeadDim; ++d) acc = _mm256_fmadd_ps(_mm256_broadcast_ss(x + d), _mm256_load_ps(vt[h][d]), acc);
      store_lanes<PerHead>(a.out + i * a.ldo + h * PerHead, acc);
    }
  }
}

// One head's half (8 of its 16 channels) at a time: PerHead accumulators, one
// per token, each row adding its x half (times its row scale) times the token's
// weight, in the order and rounding of the AVX-512 path. Sixteen accumulators
// (a whole head) would not leave AVX2's 16 registers room for the row.
template <int PerHead>
[[gnu::target("avx2,fma")]] void head_weighted_sums_half_heads_avx2(const HeadWeightedSumsArgs& a) {
  constexpr int64_t kHalf = kFastHeadDim / 2;
  for (int64_t h = 0; h < a.heads; ++h)
    for (int64_t half = 0; half < 2; ++half) {
      const int64_t channel = h * kFastHeadDim + half * kHalf;
      __m256 acc[PerHead];
      for (__m256& v : acc) v = _mm256_setzero_ps();
      for (int64_t i = 0; i < a.rows; ++i) {
        __m256 x = _mm256_loadu_ps(a.x + i * a.ldx + channel);
        if (a.row_scale != nullptr) x = _mm256_mul_ps(x, _mm256_set1_ps(a.row_scale[i]));
        const float* w = a.w + i * a.ldw + h * PerHead;
        for (int j = 0; j < PerHead; ++j) acc[j] = _mm256_fmadd_ps(_mm256_broadcast_ss(w + j), x, acc[j]);
      }
      for (int64_t j = 0; j < PerHead; ++j) {
        float* out = a.out + j * a.ldo + channel;
        _mm256_storeu_ps(out, _mm256_add_ps(_mm256_loadu_ps(out), acc[j]));
      }
    }
}

// Any shape: each head's scaled weights [rows, per_head], then a GEMM with them
// transposed.
void head_weighted_sums_gemms(const HeadWeightedSumsArgs& a) {
  std::vector<float> scaled(static_cast<size_t>(a.rows * a.per_head));
  for (int64_t h = 0; h < a.heads; ++h) {
    for (int64_t i = 0; i < a.rows; ++i) {
      const float s = a.row_scale != nullptr ? a.row_scale[i] : 1.0f;
      for (int64_t j = 0; j < a.per_head; ++j) {
        scaled[static_cast<size_t>(i * a.per_head + j)] = a.w[i * a.ldw + h * a.per_head + j] * s;
      }
    }
    gemm({.m = a.per_head, .n = a.head_dim, .k = a.rows, .a = scaled.data(), .lda = a.per_head,
          .b = a.x + h * a.head_dim, .ldb = a.ldx, .b_transposed = false, .a_transposed = true,
          .c = a.out + h * a.head_dim, .ldc = a.ldo, .accumulate = true});
  }
}

void head_weighted_sums_avx2(const HeadWeightedSumsArgs& a) {
  if (!fast_shape(a.head_dim, a.per_head)) return head_weighted_sums_gemms(a);
  with_per_head(a.per_head, [&]<int P>() { head_weighted_sums_half_heads_avx2<P>(a); });
}

void head_weighted_sums_avx512(const HeadWeightedSumsArgs& a) {
  if (a.heads % 2 != 0) return head_weighted_sums_avx2(a);
  if (!fast_shape(a.head_dim, a.per_head)) return head_weighted_sums_gemms(a);
  with_per_head(a.per_head, [&]<int P>() { head_weighted_sums_two_heads_avx512<P>(a); });
}

void head_dots_gemms(const HeadDotsArgs& a) {
  for (int64_t h = 0; h < a.heads; ++h) {
    gemm({.m = a.rows, .n = a.per_head, .k = a.head_dim, .a = a.x + h * a.head_dim, .lda = a.ldx,
          .b = a.vectors + h * a.per_head * a.head_dim, .ldb = a.head_dim, .b_transposed = true,
          .c = a.out + h * a.per_head, .ldc = a.ldo});
  }
}

void head_dots_avx2(const HeadDotsArgs& a) {
  // The transposed vectors live on the stack: up to 64 heads.
  if (a.heads > 64 || !fast_shape(a.head_dim, a.per_head)) return head_dots_gemms(a);
  with_per_head(a.per_head, [&]<int P>() { head_dots_one_head_avx2<P>(a); });
}

using HeadWeightedSums = void (*)(const HeadWeightedSumsArgs&);
const KernelTable<HeadWeightedSums> kHeadWeightedSums{
    .baseline = head_weighted_sums_gemms, .avx2 = head_weighted_sums_avx2, .avx512 = head_weighted_sums_avx512};

using HeadDots = void (*)(const HeadDotsArgs&);
const KernelTable<HeadDots> kHeadDots{.baseline = head_dots_gemms, .avx2 = head_dots_avx2};

}  // namespace

void head_weighted_sums(const HeadWeightedSumsArgs& a) { kHeadWeightedSums.best()(a); }

void head_weighted_sums(const HeadWeightedSumsArgs& a, SimdLevel level) { kHeadWeightedSums.at(level)(a); }

void head_weighted_sums_reference(const HeadWeightedSumsArgs& a) {
  for (int64_t h = 0; h < a.heads; ++h)
    for (int64_t j = 0; j < a.per_head; ++j)
      for (int64_t d = 0; d < a.head_dim; ++d) {
        double sum = 0;
        for (int64_t i = 0; i < a.rows; ++i) {
          const double s = a.row_scale != nullptr ? a.row_scale[i] : 1.0;
          sum += s * a.w[i * a.ldw + h * a.per_head + j] * a.x[i * a.ldx + h * a.head_dim + d];
        }
        float& out = a.out[j * a.ldo + h * a.head_dim + d];
        out = static_cast<float>(out + sum);
      }
}

void head_dots(const HeadDotsArgs& a) { kHeadDots.best()(a); }

void head_dots(const HeadDotsArgs& a, SimdLevel level) { kHeadDots.at(level)(a); }

void head_dots_reference(const HeadDotsArgs& a) {
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t h = 0; h < a.heads; ++h)
      for (int64_t j = 0; j < a.per_head; ++j) {
        const float* x = a.x + i * a.ldx + h * a.head_dim;
        const float* v = a.vectors + (h * a.per_head + j) * a.head_dim;
        double sum = 0;
        for (int64_t d = 0; d < a.head_dim; ++d) sum += static_cast<double>(x[d]) * v[d];
        a.out[i * a.ldo + h * a.per_head + j] = static_cast<float>(sum);
      }
}

}  // namespace sam2rt
