// The mask decoder's own kernels beside the oneDNN GEMM call each one replaced,
// at the shapes a Tiny decode runs them (one thread, as in a batch of prompts).
// Arg 0 = the GEMM call, 1 = the kernel.
#include <benchmark/benchmark.h>

#include "random_tensor.h"
#include "kernels/gelu.h"
#include "kernels/decoder/head_products.h"
#include "kernels/gemm.h"
#include "kernels/decoder/mask_products.h"
#include "kernels/decoder/small_rows_linear.h"

namespace sam2rt {
namespace {

using testing::random_tensor;

// A token Linear: 8 tokens x 256 -> 256 (attention projections) or 256 -> 2048 (MLP).
void BM_DecoderTokenLinear(benchmark::State& state) {
  const int64_t rows = 8, in = 256, out = state.range(1);
  const Tensor weight = random_tensor({out, in}, 1), bias = random_tensor({out}, 2), x = random_tensor({rows, in}, 3);
  const Tensor packed = pack_small_rows_weight(weight);
  Tensor y({rows, out});
  for (auto _ : state) {
    if (state.range(0) == 0) {
      for (int64_t r = 0; r < rows; ++r) std::copy_n(bias.data(), out, y.data() + r * out);
      gemm({.m = rows, .n = out, .k = in, .a = x.data(), .lda = in, .b = weight.data(), .ldb = in,
            .b_transposed = true, .c = y.data(), .ldc = out, .accumulate = true});
    } else {
      small_rows_linear({.rows = rows, .in = in, .columns = out, .x = x.data(), .ldx = in, .packed = packed.data(),
                         .bias = bias.data(), .y = y.data(), .ldy = out});
    }
    benchmark::DoNotOptimize(y.data());
  }
}
BENCHMARK(BM_DecoderTokenLinear)->Args({0, 256})->Args({1, 256})->Args({0, 2048})->Args({1, 2048});

// Scores of 256 image rows against 8 heads x 8 tokens of 16 channels.
void BM_DecoderHeadDots(benchmark::State& state) {
  const int64_t rows = 256, heads = 8, head_dim = 16, tokens = 8;
  const Tensor x = random_tensor({rows, heads * head_dim}, 4), vectors = random_tensor({heads * tokens, head_dim}, 5);
  Tensor out({rows, heads * tokens});
  for (auto _ : state) {
    if (state.range(0) == 0) {
      for (int64_t h = 0; h < heads; ++h) {
        gemm({.m = rows, .n = tokens, .k = head_dim, .a = x.data() + h * head_dim, .lda = heads * head_dim,
              .b = vectors.data() + h * tokens * head_dim, .ldb = head_dim, .b_transposed = true,
              .c = out.data() + h * tokens, .ldc = heads * tokens});
      }
    } else {
      head_dots({.rows = rows, .heads = heads, .head_dim = head_dim, .per_head = tokens, .x = x.data(),
                 .ldx = heads * head_dim, .vectors = vectors.data(), .out = out.data(), .ldo = heads * tokens});
    }
    benchmark::DoNotOptimize(out.data());
  }
}
BENCHMARK(BM_DecoderHeadDots)->Arg(0)->Arg(1);

// Probability-weighted values of one pair of heads over the 4096 image rows.
void BM_DecoderHeadWeightedSums(benchmark::State& state) {
  const int64_t rows = 4096, heads = 2, head_dim = 16, tokens = 8, pairs = 8 * tokens, width = 128;
  const Tensor w = random_tensor({rows, pairs}, 6), x = random_tensor({rows, width}, 7);
  Tensor out({tokens, width}), transposed({tokens, rows});
  for (auto _ : state) {
    if (state.range(0) == 0) {
      for (int64_t h = 0; h < heads; ++h) {
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t j = 0; j < tokens; ++j) transposed[j * rows + i] = w[i * pairs + h * tokens + j];
        gemm({.m = tokens, .n = head_dim, .k = rows, .a = transposed.data(), .lda = rows, .b = x.data() + h * head_dim,
              .ldb = width, .b_transposed = false, .c = out.data() + h * head_dim, .ldc = width, .accumulate = true});
      }
    } else {
      head_weighted_sums({.rows = rows, .heads = heads, .head_dim = head_dim, .per_head = tokens, .w = w.data(),
                          .ldw = pairs, .row_scale = nullptr, .x = x.data(), .ldx = width, .out = out.data(),
                          .ldo = width});
    }
    benchmark::DoNotOptimize(out.data());
  }
}
BENCHMARK(BM_DecoderHeadWeightedSums)->Arg(0)->Arg(1);

// The last steps of the upscaling for one input row of the second
// ConvTranspose (128 pixels: two output rows of 256) and 3 masks (a multimask
// prediction's): fused (arg 0) and unfused (arg 1).
void BM_DecoderMaskProducts(benchmark::State& state) {
  const int64_t masks = 3, channels = 32, w = 128;
  const Tensor hyper = random_tensor({masks, channels}, 8), taps = random_tensor({4 * channels, w}, 9);
  const Tensor skip = random_tensor({4 * channels, w}, 10), bias = random_tensor({channels}, 11);
  Tensor out({masks, 4 * w});
  std::vector<float> scratch(static_cast<size_t>(w));
  const UpscaledMaskProductsArgs args{.taps = taps.data(), .ld_taps = w, .w = w, .cout = channels,
                                      .bias = bias.data(), .skip = skip.data(), .hyper = hyper.data(),
                                      .masks = masks, .out = out.data(), .ldo = 4 * w, .scratch = scratch.data()};
  for (auto _ : state) {
    if (state.range(0) == 0) {
      upscaled_mask_products(args);
    } else {
      upscaled_mask_products_unfused(args);
    }
    benchmark::DoNotOptimize(out.data());
  }
}
BENCHMARK(BM_DecoderMaskProducts)->Arg(0)->Arg(1);

// GELU over the first upscaled map of a prompt (128 x 128 x 64 values, 4 MB),
// by each SIMD level this CPU has (the arg is the SimdLevel); items are values.
void BM_DecoderGelu(benchmark::State& state) {
  const auto level = static_cast<SimdLevel>(state.range(0));
  if (level > best_simd_level()) {
    state.SkipWithError("level not supported on this CPU");
    return;
  }
  const Tensor x = random_tensor({128 * 128 * 64}, 10);
  Tensor y = x.clone();
  for (auto _ : state) {
    std::copy_n(x.data(), x.numel(), y.data());
    gelu_exact_inplace(y.data(), y.numel(), level);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetItemsProcessed(state.iterations() * x.numel());
}
BENCHMARK(BM_DecoderGelu)
    ->Arg(static_cast<int>(SimdLevel::baseline))
    ->Arg(static_cast<int>(SimdLevel::avx2))
    ->Arg(static_cast<int>(SimdLevel::avx512));

}  // namespace
}  // namespace sam2rt
