// Micro-benchmarks of the encoder's hot kernels at Tiny-at-1024 shapes.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "random_tensor.h"
#include "kernels/attention.h"
#include "kernels/layout.h"
#include "kernels/matmul.h"
#include "kernels/norm.h"
#include "kernels/softmax.h"

namespace sam2rt {
namespace {

using testing::random_tensor;

// PackedLinear rows x in -> out, fp32 (arg 3 = 0) or bf16 (1).
void BM_PackedLinear(benchmark::State& state) {
  const int64_t rows = state.range(0), in = state.range(1), out = state.range(2);
  const MatmulPrecision precision = state.range(3) ? MatmulPrecision::bf16 : MatmulPrecision::fp32;
  const PackedLinear layer(random_tensor({out, in}, 1), random_tensor({out}, 2), precision);
  const Tensor x = random_tensor({rows, in}, 3);
  std::vector<uint16_t> x16(static_cast<size_t>(rows * in), 0x3f80);
  Tensor y({rows, out});
  for (auto _ : state) {
    if (precision == MatmulPrecision::bf16) {
      layer.forward(x16.data(), rows, y.data());
    } else {
      layer.forward(x.data(), rows, y.data());
    }
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(rows * in * out),
                                                 benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_PackedLinear)
    ->Args({65536, 96, 288, 0})
    ->Args({65536, 96, 384, 0})
    ->Args({4096, 384, 1536, 0})
    ->Args({4096, 1536, 384, 0})
    ->Args({4096, 384, 1536, 1})
    ->Args({4096, 1536, 384, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Global attention of Tiny's stage 3: 4096 tokens, 4 heads of 96, fused qkv input.
void BM_GlobalAttention(benchmark::State& state) {
  const int64_t tokens = 4096, heads = 4, head_dim = 96, width = heads * head_dim;
  const Tensor qkv = random_tensor({tokens, 3 * width}, 4);
  Tensor out({tokens, width});
  for (auto _ : state) {
    attention({.nq = tokens, .nk = tokens, .heads = heads, .head_dim = head_dim, .q = qkv.data(), .ldq = 3 * width,
               .k = qkv.data() + width, .ldk = 3 * width, .v = qkv.data() + 2 * width, .ldv = 3 * width,
               .out = out.data(), .ldo = width, .scale = 0.1f});
  }
  state.counters["GFLOP/s"] = benchmark::Counter(4.0 * static_cast<double>(tokens * tokens * width),
                                                 benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_GlobalAttention)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_LayerNorm(benchmark::State& state) {
  const int64_t rows = 65536, c = 96;
  const Tensor x = random_tensor({rows, c}, 5), w = random_tensor({c}, 6), b = random_tensor({c}, 7);
  Tensor y({rows, c});
  for (auto _ : state) layer_norm_rows(x.data(), c, rows, c, w.data(), b.data(), 1e-6f, y.data(), c);
  state.SetBytesProcessed(state.iterations() * rows * c * 8);
}
BENCHMARK(BM_LayerNorm)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Softmax(benchmark::State& state) {
  Tensor x = random_tensor({64, 4096}, 8);
  for (auto _ : state) softmax_rows(x.data(), 64, 4096, 4096);
  state.SetItemsProcessed(state.iterations() * 64 * 4096);
}
BENCHMARK(BM_Softmax)->Unit(benchmark::kMicrosecond);

void BM_HwcToNchw(benchmark::State& state) {
  const Tensor x = random_tensor({256, 256, 256}, 9);
  Tensor y({1, 256, 256, 256});
  for (auto _ : state) hwc_to_nchw_into(x, y);
  state.SetBytesProcessed(state.iterations() * x.numel() * 8);
}
BENCHMARK(BM_HwcToNchw)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace sam2rt
