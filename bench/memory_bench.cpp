// The video memory modules at Tiny's shapes (synthetic weights: their cost
// does not depend on the values): the memory encoder on one frame (E = 64,
// C = 256, a 1024 x 1024 mask), and the memory attention of one frame against
// the full memory of the official predictor, 7 memory frames (num_maskmem)
// plus 16 object pointers of 4 tokens each.
//
//   OMP_NUM_THREADS=2 ./build/bench/sam2rt_bench --benchmark_filter=Memory
#include <benchmark/benchmark.h>

#include <memory>

#include "backends/cpu_backend.h"
#include "model/memory_attention.h"
#include "model/memory_encoder.h"
#include "model/memory_weights.h"
#include "random_tensor.h"

namespace sam2rt {
namespace {

using testing::random_tensor;

void BM_MemoryEncoderTiny(benchmark::State& state) {
  const ModelConfig config = preset_config("tiny");
  const MemoryEncoder encoder(config, synthetic_memory_weights(config, 0), std::make_shared<CpuBackend>());
  const int64_t side = config.image_embedding_size();
  const Tensor pix_feat = random_tensor({side, side, config.embed_dim()}, 1);
  const Tensor mask = random_tensor({1, config.image_size, config.image_size}, 2, 10.0f);
  for (auto _ : state) benchmark::DoNotOptimize(encoder.encode(pix_feat, mask, false));
}
BENCHMARK(BM_MemoryEncoderTiny)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_MemoryAttentionTiny(benchmark::State& state) {
  const ModelConfig config = preset_config("tiny");
  const MemoryAttention attention(config, synthetic_memory_weights(config, 0), std::make_shared<CpuBackend>());
  const int64_t pixels = config.image_embedding_size() * config.image_embedding_size(), c = config.embed_dim();
  const int64_t pointer_tokens = 16 * (c / config.mem_dim());
  const int64_t rows = config.num_maskmem * pixels + pointer_tokens;
  const Tensor curr = random_tensor({pixels, c}, 3), curr_pos = random_tensor({pixels, c}, 4);
  const Tensor memory = random_tensor({rows, config.mem_dim()}, 5),
               memory_pos = random_tensor({rows, config.mem_dim()}, 6);
  for (auto _ : state) {
    benchmark::DoNotOptimize(attention.forward(curr, curr_pos, memory, memory_pos, pointer_tokens));
  }
}
BENCHMARK(BM_MemoryAttentionTiny)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace sam2rt
