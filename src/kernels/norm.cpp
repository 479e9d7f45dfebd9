#include "kernels/norm.h"

#include <immintrin.h>

#include <cmath>

#include "core/error.h"
#include "kernels/simd.h"

// Vector helpers are inlined into per-ISA functions (simd.h): no ABI crossing.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace sam2rt {

namespace {

inline void store_row_value(float* y, float v) { *y = v; }
inline void store_row_value(uint16_t* y, float v) { *y = simd::to_bf16(v); }

template <int Lanes, class Out>
[[gnu::always_inline]] inline void layer_norm_row(const float* x, int64_t c, const float* w, const float* b, float eps,
                                                  Out* y) {
  using V = typename simd::Types<Lanes>::F;
  const int64_t vec_end = c / Lanes * Lanes;
  V acc{};
  for (int64_t i = 0; i < vec_end; i += Lanes) acc += simd::load<V>(x + i);
  float sum = simd::reduce_add(acc);
  for (int64_t i = vec_end; i < c; ++i) sum += x[i];
  const float mean = sum / static_cast<float>(c);
  acc = V{};
  for (int64_t i = 0; i < vec_end; i += Lanes) {
    const V d = simd::load<V>(x + i) - mean;
    acc += d * d;
  }
  float sq = simd::reduce_add(acc);
  for (int64_t i = vec_end; i < c; ++i) sq += (x[i] - mean) * (x[i] - mean);
  const float inv = 1.0f / std::sqrt(sq / static_cast<float>(c) + eps);
  for (int64_t i = 0; i < vec_end; i += Lanes) {
    const V v = (simd::load<V>(x + i) - mean) * inv * simd::load<V>(w + i) + simd::load<V>(b + i);
    if constexpr (sizeof(Out) == sizeof(float)) {
      simd::store(y + i, v);
    } else {
      for (int l = 0; l < Lanes; ++l) y[i + l] = simd::to_bf16(v[l]);
    }
  }
  for (int64_t i = vec_end; i < c; ++i) store_row_value(y + i, (x[i] - mean) * inv * w[i] + b[i]);
}

// GCC 12's AVX-512 intrinsics start some results from an "undefined" vector,
// which it then reports as maybe-uninitialized once inlined.
#pragma GCC diagnostic push
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

constexpr int kGroupRows = 16;

// Lane r of the result is the sum of row[r]'s 16 lanes added one after another
// from zero, as simd::reduce_add adds them: the rows transposed (lane r of
// column j is row[r]'s lane j), then the columns added in order. One row's
// horizontal sum is a chain of 16 dependent additions and as many lane
// extractions; here 16 rows share 64 shuffles and 16 vector additions.
[[gnu::target("avx512f"), gnu::always_inline]] inline __m512 lane_sums_of_16_rows(const __m512* row) {
  __m512 pairs[kGroupRows], quads[kGroupRows];
  for (int i = 0; i < kGroupRows; i += 2) {
    pairs[i] = _mm512_unpacklo_ps(row[i], row[i + 1]);
    pairs[i + 1] = _mm512_unpackhi_ps(row[i], row[i + 1]);
  }
  // quads[4 i + k], 128-bit lane L: rows 4 i .. 4 i + 3 of column 4 L + k.
  for (int i = 0; i < kGroupRows; i += 4) {
    quads[i] = _mm512_shuffle_ps(pairs[i], pairs[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    quads[i + 1] = _mm512_shuffle_ps(pairs[i], pairs[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    quads[i + 2] = _mm512_shuffle_ps(pairs[i + 1], pairs[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    quads[i + 3] = _mm512_shuffle_ps(pairs[i + 1], pairs[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  __m512 column[kGroupRows];
  for (int k = 0; k < 4; ++k) {
    const __m512 even01 = _mm512_shuffle_f32x4(quads[k], quads[4 + k], 0x88);
    const __m512 odd01 = _mm512_shuffle_f32x4(quads[k], quads[4 + k], 0xDD);
    const __m512 even23 = _mm512_shuffle_f32x4(quads[8 + k], quads[12 + k], 0x88);
    const __m512 odd23 = _mm512_shuffle_f32x4(quads[8 + k], quads[12 + k], 0xDD);
    column[k] = _mm512_shuffle_f32x4(even01, even23, 0x88);
    column[8 + k] = _mm512_shuffle_f32x4(even01, even23, 0xDD);
    column[4 + k] = _mm512_shuffle_f32x4(odd01, odd23, 0x88);
    column[12 + k] = _mm512_shuffle_f32x4(odd01, odd23, 0xDD);
  }
  __m512 sum = _mm512_setzero_ps();
  for (const __m512& c : column) sum = _mm512_add_ps(sum, c);
  return sum;
}

// layer_norm_row<16> of 16 rows at once (c a multiple of 16), with the same
// operations in the same order for each row, so the same bits: the rows'
// horizontal sums (lane_sums_of_16_rows) and their scalar steps (mean, 1 /
// sqrt) as lanes of one vector.
template <class Out>
[[gnu::target("avx512f,avx512bw,avx512vl"), gnu::always_inline]] inline void layer_norm_16_rows(
    const float* x, int64_t ldx, int64_t c, const float* w, const float* b, float eps, Out* y, int64_t ldy) {
  const __m512 channels = _mm512_set1_ps(static_cast<float>(c));
  __m512 acc[kGroupRows];
  for (int r = 0; r < kGroupRows; ++r) {
    acc[r] = _mm512_setzero_ps();
    for (int64_t i = 0; i < c; i += 16) acc[r] = _mm512_add_ps(acc[r], _mm512_loadu_ps(x + r * ldx + i));
  }
  alignas(64) float mean[kGroupRows], inv[kGroupRows];
  _mm512_store_ps(mean, _mm512_div_ps(lane_sums_of_16_rows(acc), channels));
  for (int r = 0; r < kGroupRows; ++r) {
    const __m512 m = _mm512_set1_ps(mean[r]);
    acc[r] = _mm512_setzero_ps();
    for (int64_t i = 0; i < c; i += 16) {
      const __m512 d = _mm512_sub_ps(_mm512_loadu_ps(x + r * ldx + i), m);
      acc[r] = _mm512_add_ps(acc[r], _mm512_mul_ps(d, d));
    }
  }
  const __m512 variance = _mm512_div_ps(lane_sums_of_16_rows(acc), channels);
  _mm512_store_ps(inv, _mm512_div_ps(_mm512_set1_ps(1.0f),
                                     _mm512_sqrt_ps(_mm512_add_ps(variance, _mm512_set1_ps(eps)))));
  for (int r = 0; r < kGroupRows; ++r) {
    const __m512 m = _mm512_set1_ps(mean[r]), s = _mm512_set1_ps(inv[r]);
    for (int64_t i = 0; i < c; i += 16) {
      const __m512 v = _mm512_add_ps(
          _mm512_mul_ps(_mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(x + r * ldx + i), m), s), _mm512_loadu_ps(w + i)),
          _mm512_loadu_ps(b + i));
      if constexpr (sizeof(Out) == sizeof(float)) {
        _mm512_storeu_ps(y + r * ldy + i, v);
      } else {
        alignas(64) float lanes[16];
        _mm512_store_ps(lanes, v);
        for (int l = 0; l < 16; ++l) y[r * ldy + i + l] = simd::to_bf16(lanes[l]);
      }
    }
  }
}

#pragma GCC diagnostic pop

// Each path holds its own OpenMP loop: GCC outlines a parallel region before
// inlining, and the outlined body keeps the target of the function it is in.
// Rows go out 64 at a time to whichever thread is free (dynamic): on a shared
// machine a thread that shares its core with another program runs slower, and
// a static split would make the others wait for it. At AVX-512, widths that
// are a multiple of 16 (every Hiera and decoder norm) go 16 rows at a time.
template <class Out>
[[gnu::target("avx512f,avx512bw,avx512vl")]] void layer_norm_avx512(const float* x, int64_t ldx, int64_t rows,
                                                                   int64_t c, const float* w, const float* b,
                                                                   float eps, Out* y, int64_t ldy) {
  const int64_t grouped = c % 16 == 0 ? rows / kGroupRows * kGroupRows : 0;
#pragma omp parallel for schedule(dynamic, 64 / kGroupRows) if (rows > 64)
  for (int64_t g = 0; g < grouped; g += kGroupRows) {
    layer_norm_16_rows(x + g * ldx, ldx, c, w, b, eps, y + g * ldy, ldy);
  }
  for (int64_t r = grouped; r < rows; ++r) layer_norm_row<16>(x + r * ldx, c, w, b, eps, y + r * ldy);
}

template <class Out>
[[gnu::target("avx2,fma")]] void layer_norm_avx2(const float* x, int64_t ldx, int64_t rows, int64_t c, const float* w,
                                                 const float* b, float eps, Out* y, int64_t ldy) {
#pragma omp parallel for schedule(dynamic, 64) if (rows > 64)
  for (int64_t r = 0; r < rows; ++r) layer_norm_row<8>(x + r * ldx, c, w, b, eps, y + r * ldy);
}

template <class Out>
void layer_norm_baseline(const float* x, int64_t ldx, int64_t rows, int64_t c, const float* w, const float* b,
                         float eps, Out* y, int64_t ldy) {
#pragma omp parallel for schedule(dynamic, 64) if (rows > 64)
  for (int64_t r = 0; r < rows; ++r) layer_norm_row<4>(x + r * ldx, c, w, b, eps, y + r * ldy);
}

template <class Out>
using LayerNormRows = void (*)(const float*, int64_t, int64_t, int64_t, const float*, const float*, float, Out*,
                               int64_t);

template <class Out>
const KernelTable<LayerNormRows<Out>> kLayerNormRows{
    .baseline = layer_norm_baseline<Out>, .avx2 = layer_norm_avx2<Out>, .avx512 = layer_norm_avx512<Out>};

}  // namespace

void layer_norm_rows(const float* x, int64_t ldx, int64_t rows, int64_t channels, const float* weight,
                     const float* bias, float eps, float* y, int64_t ldy, SimdLevel level) {
  kLayerNormRows<float>.at(level)(x, ldx, rows, channels, weight, bias, eps, y, ldy);
}

void layer_norm_rows(const float* x, int64_t ldx, int64_t rows, int64_t channels, const float* weight,
                     const float* bias, float eps, uint16_t* y, int64_t ldy, SimdLevel level) {
  kLayerNormRows<uint16_t>.at(level)(x, ldx, rows, channels, weight, bias, eps, y, ldy);
}

namespace {

// The double-precision form: one vector of c values `step` floats apart, its
// mean and biased variance accumulated in double, each output rounded once.
// The decoder's token norms keep it rather than the float kernel above: with the
// float kernel there, tiny_g16's segment-everything (amg fixtures) changes in 61
// of its 81 masks' predicted_iou (by about a float ulp) and 2 stability scores,
// still within the goldens' rule but no longer the same output.
void layer_norm_in_double(const float* in, int64_t c, int64_t step, const float* w, const float* b, float eps,
                          float* out) {
  double sum = 0.0;
  for (int64_t i = 0; i < c; ++i) sum += in[i * step];
  const double mean = sum / static_cast<double>(c);
  double sq = 0.0;
  for (int64_t i = 0; i < c; ++i) {
    const double d = in[i * step] - mean;
    sq += d * d;
  }
  const double inv = 1.0 / std::sqrt(sq / static_cast<double>(c) + static_cast<double>(eps));
  for (int64_t i = 0; i < c; ++i) out[i * step] = static_cast<float>((in[i * step] - mean) * inv * w[i] + b[i]);
}

}  // namespace

Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps) {
  const int64_t c = x.dim(-1);
  if (weight.numel() != c || bias.numel() != c) throw Error("layer_norm: weight size does not match input");
  const int64_t rows = x.numel() / c;
  Tensor y(x.shape());
#pragma omp parallel for schedule(dynamic, 64) if (rows > 256)
  for (int64_t r = 0; r < rows; ++r) {
    layer_norm_in_double(x.data() + r * c, c, 1, weight.data(), bias.data(), eps, y.data() + r * c);
  }
  return y;
}

Tensor layer_norm_2d(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps) {
  const int64_t n = x.dim(0), c = x.dim(1), hw = x.numel() / (n * c);
  if (weight.numel() != c || bias.numel() != c) throw Error("layer_norm_2d: weight size does not match input");
  Tensor y(x.shape());
  for (int64_t b = 0; b < n; ++b) {
    const float* in = x.data() + b * c * hw;
    float* out = y.data() + b * c * hw;
#pragma omp parallel for schedule(dynamic, 256) if (hw > 1024)
    for (int64_t p = 0; p < hw; ++p) layer_norm_in_double(in + p, c, hw, weight.data(), bias.data(), eps, out + p);
  }
  return y;
}

}  // namespace sam2rt
