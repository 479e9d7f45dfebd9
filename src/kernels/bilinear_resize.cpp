#include "kernels/bilinear_resize.h"

#include <immintrin.h>

#include <algorithm>
#include <utility>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/simd_dispatch.h"

namespace sam2rt {

// PyTorch's compute_source_index_and_lambda (upsample_bilinear2d, align_corners=False):
// the ratio is float, the source index is evaluated in double (CPU acc_type) and the
// weights are stored as float.
LinearTaps linear_taps(int64_t in, int64_t out) {
  LinearTaps taps;
  taps.lo.resize(out);
  taps.hi.resize(out);
  taps.w_lo.resize(out);
  taps.w_hi.resize(out);
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  for (int64_t i = 0; i < out; ++i) {
    if (in == out) {
      taps.lo[i] = taps.hi[i] = i;
      taps.w_lo[i] = 1.0f;
      taps.w_hi[i] = 0.0f;
      continue;
    }
    const double source = std::max(static_cast<double>(scale) * (static_cast<double>(i) + 0.5) - 0.5, 0.0);
    const int64_t lo = static_cast<int64_t>(source);
    taps.lo[i] = lo;
    taps.hi[i] = lo + (lo < in - 1 ? 1 : 0);
    taps.w_hi[i] = static_cast<float>(std::clamp(source - static_cast<double>(lo), 0.0, 1.0));
    taps.w_lo[i] = static_cast<float>(1.0 - static_cast<double>(taps.w_hi[i]));
  }
  return taps;
}

namespace {

void check_args(const Tensor& x, int64_t out_h, int64_t out_w) {
  if (x.rank() < 2 || x.dim(-1) <= 0 || x.dim(-2) <= 0 || out_h <= 0 || out_w <= 0) {
    throw Error("bilinear_resize: cannot resize " + shape_to_string(x.shape()) + " to " + std::to_string(out_h) +
                "x" + std::to_string(out_w));
  }
}

Shape resized_shape(const Tensor& x, int64_t out_h, int64_t out_w) {
  Shape shape = x.shape();
  shape[shape.size() - 2] = out_h;
  shape[shape.size() - 1] = out_w;
  return shape;
}

// Output rows per task of bilinear_resize.
constexpr int64_t kOutputRowBand = 32;
// Outputs at least this large are written around the caches (streaming stores):
// a batch of masks at a photo's size is hundreds of megabytes that nothing reads
// soon, and an ordinary store first reads each line it writes.
constexpr int64_t kStreamedOutputBytes = int64_t{8} << 20;

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
// GCC 12 flags its own AVX-512 intrinsics (masked loads) as maybe-uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// upper[j..j+16) * wu + lower[j..j+16) * wl (two products, then their sum).
__attribute__((target("avx512f"), always_inline)) inline __m512 blend_16(const float* upper, __m512 wu,
                                                                         const float* lower, __m512 wl) {
  return _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(upper), wu), _mm512_mul_ps(_mm512_loadu_ps(lower), wl));
}

// out[j] = upper[j] * w_upper + lower[j] * w_lower (two products, then their sum);
// with `stream`, the 64-byte aligned part of out by streaming stores.
__attribute__((target("avx512f"))) void blend_rows_avx512(const float* upper, float w_upper, const float* lower,
                                                          float w_lower, int64_t n, float* out, bool stream) {
  const __m512 wu = _mm512_set1_ps(w_upper), wl = _mm512_set1_ps(w_lower);
  auto blend_one = [&](int64_t j) { out[j] = upper[j] * w_upper + lower[j] * w_lower; };
  int64_t j = 0;
  if (stream) {
    for (; j < n && reinterpret_cast<uintptr_t>(out + j) % 64 != 0; ++j) blend_one(j);
    for (; j + 16 <= n; j += 16) _mm512_stream_ps(out + j, blend_16(upper + j, wu, lower + j, wl));
  }
  for (; j + 16 <= n; j += 16) _mm512_storeu_ps(out + j, blend_16(upper + j, wu, lower + j, wl));
  for (; j < n; ++j) blend_one(j);
}

void blend_rows_plain(const float* upper, float w_upper, const float* lower, float w_lower, int64_t n, float* out,
                      bool /*stream*/) {
  for (int64_t j = 0; j < n; ++j) out[j] = upper[j] * w_upper + lower[j] * w_lower;
}

using BlendRows = void (*)(const float*, float, const float*, float, int64_t, float*, bool);
const KernelTable<BlendRows> kBlendRows{.baseline = blend_rows_plain, .avx512 = blend_rows_avx512};

// 16 consecutive outputs of the blend along x whose taps all lie in one window
// of 16 consecutive source values, at offsets lo and hi from `base`.
struct ColumnBlock {
  int64_t base;
  int32_t lo[16], hi[16];
};

// The blocks' outputs (16 each, from out on), their weights 16 per block from
// w_lo and w_hi on: each source window loaded once and both taps picked by
// permutes.
__attribute__((target("avx512f"))) void blend_column_blocks_avx512(const ColumnBlock* blocks, size_t count,
                                                                   int64_t in_w, const float* w_lo,
                                                                   const float* w_hi, const float* src, float* out) {
  for (size_t b = 0; b < count; ++b) {
    const ColumnBlock& block = blocks[b];
    const int64_t left = in_w - block.base;
    const __mmask16 valid = left >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << left) - 1u);
    const __m512 window = _mm512_maskz_loadu_ps(valid, src + block.base);
    const __m512 lo = _mm512_permutexvar_ps(_mm512_loadu_si512(block.lo), window);
    const __m512 hi = _mm512_permutexvar_ps(_mm512_loadu_si512(block.hi), window);
    _mm512_storeu_ps(out + 16 * b, _mm512_add_ps(_mm512_mul_ps(lo, _mm512_loadu_ps(w_lo + 16 * b)),
                                                 _mm512_mul_ps(hi, _mm512_loadu_ps(w_hi + 16 * b))));
  }
}

// Only AVX-512 has the two-source permutes the blocks need; no entry below it.
using BlendColumnBlocks = void (*)(const ColumnBlock*, size_t, int64_t, const float*, const float*, const float*,
                                   float*);
const KernelTable<BlendColumnBlocks> kBlendColumnBlocks{.avx512 = blend_column_blocks_avx512};

// The blend along x of one source row: out[j] = src[lo[j]] * w_lo[j] + src[hi[j]] * w_hi[j].
// Where 16 consecutive outputs read at most 16 consecutive source values (any
// enlargement), they are blended as a block (blend_blocks, when the CPU has one).
class ColumnBlend {
 public:
  ColumnBlend(LinearTaps taps, int64_t in_w, BlendColumnBlocks blend_blocks)
      : taps_(std::move(taps)), in_w_(in_w), blend_blocks_(blend_blocks) {
    const int64_t out_w = static_cast<int64_t>(taps_.lo.size());
    for (int64_t j0 = 0; blend_blocks_ != nullptr && j0 + 16 <= out_w; j0 += 16) {
      const int64_t base = taps_.lo[static_cast<size_t>(j0)];
      if (taps_.hi[static_cast<size_t>(j0 + 15)] - base >= 16) break;
      ColumnBlock block{.base = base, .lo = {}, .hi = {}};
      for (int64_t k = 0; k < 16; ++k) {
        block.lo[k] = static_cast<int32_t>(taps_.lo[static_cast<size_t>(j0 + k)] - base);
        block.hi[k] = static_cast<int32_t>(taps_.hi[static_cast<size_t>(j0 + k)] - base);
      }
      blocks_.push_back(block);
    }
  }

  void apply(const float* src, float* out) const {
    if (!blocks_.empty()) {
      blend_blocks_(blocks_.data(), blocks_.size(), in_w_, taps_.w_lo.data(), taps_.w_hi.data(), src, out);
    }
    const int64_t out_w = static_cast<int64_t>(taps_.lo.size());
    for (int64_t j = 16 * static_cast<int64_t>(blocks_.size()); j < out_w; ++j) {
      const auto k = static_cast<size_t>(j);
      out[j] = src[taps_.lo[k]] * taps_.w_lo[k] + src[taps_.hi[k]] * taps_.w_hi[k];
    }
  }

 private:
  LinearTaps taps_;
  int64_t in_w_;
  BlendColumnBlocks blend_blocks_;
  std::vector<ColumnBlock> blocks_;
};

#pragma GCC diagnostic pop

}  // namespace

Tensor bilinear_resize(const Tensor& x, int64_t out_h, int64_t out_w) {
  check_args(x, out_h, out_w);
  Tensor y = Tensor::uninitialized(resized_shape(x, out_h, out_w));
  bilinear_resize(x, y);
  return y;
}

void bilinear_resize(const Tensor& x, Tensor& y) {
  const int64_t out_h = y.rank() >= 2 ? y.dim(-2) : 0, out_w = y.rank() >= 2 ? y.dim(-1) : 0;
  check_args(x, out_h, out_w);
  if (y.shape() != resized_shape(x, out_h, out_w)) {
    throw Error("bilinear_resize: cannot resize " + shape_to_string(x.shape()) + " into " + shape_to_string(y.shape()));
  }
  const int64_t in_h = x.dim(-2), in_w = x.dim(-1), planes = x.numel() / (in_h * in_w);
  const LinearTaps rows = linear_taps(in_h, out_h);
  const ColumnBlend cols(linear_taps(in_w, out_w), in_w, kBlendColumnBlocks.best());
  const BlendRows blend_rows = kBlendRows.best();
  // Separable: each source row is interpolated along x once (not once per output
  // row that reads it), then output rows blend two of those. The float operations
  // per output value are the same as blending the four taps directly. Bands of
  // output rows are the tasks: each blends the few source rows it reads into a
  // per-thread buffer that stays in cache and is reused from call to call (a
  // fresh one faulted in ~1 MB per mask).
  const int64_t bands = (out_h + kOutputRowBand - 1) / kOutputRowBand;
  const bool parallel = planes * out_h * out_w > 65536;
  const bool stream = y.numel() * static_cast<int64_t>(sizeof(float)) >= kStreamedOutputBytes;
#pragma omp parallel for collapse(2) schedule(static) if (parallel)
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t band = 0; band < bands; ++band) {
      const int64_t first = band * kOutputRowBand, last = std::min(out_h, first + kOutputRowBand);
      const int64_t src_first = rows.lo[static_cast<size_t>(first)];
      const int64_t src_rows = rows.hi[static_cast<size_t>(last - 1)] - src_first + 1;
      thread_local std::vector<float> along_x;
      along_x.resize(std::max(along_x.size(), static_cast<size_t>(src_rows * out_w)));
      for (int64_t i = 0; i < src_rows; ++i) {
        cols.apply(x.data() + (p * in_h + src_first + i) * in_w, along_x.data() + i * out_w);
      }
      for (int64_t i = first; i < last; ++i) {
        const auto k = static_cast<size_t>(i);
        blend_rows(along_x.data() + (rows.lo[k] - src_first) * out_w, rows.w_lo[k],
                   along_x.data() + (rows.hi[k] - src_first) * out_w, rows.w_hi[k], out_w,
                   y.data() + (p * out_h + i) * out_w, stream);
      }
      // Streaming stores are weakly ordered: done before whoever reads y is told so.
      if (stream) _mm_sfence();
    }
  }
}

Tensor bilinear_resize_reference(const Tensor& x, int64_t out_h, int64_t out_w) {
  check_args(x, out_h, out_w);
  const int64_t in_h = x.dim(-2), in_w = x.dim(-1), planes = x.numel() / (in_h * in_w);
  Tensor y(resized_shape(x, out_h, out_w));
  // Sample position of output pixel i in input pixel units, clamped to the image.
  // The ratio is rounded to float as in PyTorch; that rounding is part of the definition.
  auto locate = [](int64_t i, int64_t in, int64_t out, int64_t& lo, int64_t& hi, double& frac) {
    const double ratio = static_cast<float>(in) / static_cast<float>(out);
    double s = (static_cast<double>(i) + 0.5) * ratio - 0.5;
    s = std::clamp(s, 0.0, static_cast<double>(in - 1));
    lo = static_cast<int64_t>(s);
    hi = std::min(lo + 1, in - 1);
    frac = s - static_cast<double>(lo);
  };
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t i = 0; i < out_h; ++i) {
      int64_t y0, y1;
      double fy;
      locate(i, in_h, out_h, y0, y1, fy);
      for (int64_t j = 0; j < out_w; ++j) {
        int64_t x0, x1;
        double fx;
        locate(j, in_w, out_w, x0, x1, fx);
        const float* plane = x.data() + p * in_h * in_w;
        const double v = (1 - fy) * ((1 - fx) * plane[y0 * in_w + x0] + fx * plane[y0 * in_w + x1]) +
                         fy * ((1 - fx) * plane[y1 * in_w + x0] + fx * plane[y1 * in_w + x1]);
        y[(p * out_h + i) * out_w + j] = static_cast<float>(v);
      }
    }
  return y;
}

}  // namespace sam2rt
