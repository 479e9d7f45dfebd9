// Prompt -> mask latency of the Tiny model (random image features, synthetic
// weights: the decoder's cost does not depend on the values), and the time to
// get Tiny weights ready to run from a checkpoint file in the page cache.
//
//   ./build/bench/sam2rt_bench --benchmark_filter=Decoder
#include <benchmark/benchmark.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <random>
#include <unistd.h>

#include "api/predictor.h"
#include "api/sam2_model.h"
#include "io/checkpoint.h"
#include "io/safetensors.h"
#include "model/synthetic_weights.h"

namespace sam2rt {
namespace {

constexpr int kImageSide = 1024;

std::shared_ptr<const Sam2Model> tiny_model() {
  static const std::shared_ptr<const Sam2Model> model = [] {
    const ModelConfig config = preset_config("tiny");
    return std::make_shared<const Sam2Model>(config, synthetic_weights(config, 0));
  }();
  return model;
}

Tensor random_tensor(Shape shape, std::mt19937& rng) {
  Tensor t(std::move(shape));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& v : t) v = normal(rng);
  return t;
}

Predictor tiny_predictor() {
  Predictor predictor(tiny_model());
  const ModelConfig& c = predictor.model().config();
  const int64_t d = c.embed_dim(), e = c.image_embedding_size();
  std::mt19937 rng(7);
  predictor.set_features({random_tensor({1, d, e, e}, rng), random_tensor({1, d / 4, 2 * e, 2 * e}, rng),
                          random_tensor({1, d / 8, 4 * e, 4 * e}, rng)},
                         kImageSide, kImageSide);
  return predictor;
}

// One positive click per cell of a square grid over the image.
std::vector<Prompt> grid_clicks(int count) {
  std::vector<Prompt> prompts;
  const int side = static_cast<int>(std::ceil(std::sqrt(count)));
  const float cell = static_cast<float>(kImageSide) / static_cast<float>(side);
  for (int i = 0; i < count; ++i) {
    Prompt p;
    p.points.push_back({(static_cast<float>(i % side) + 0.5f) * cell, (static_cast<float>(i / side) + 0.5f) * cell, 1});
    prompts.push_back(p);
  }
  return prompts;
}

void BM_DecoderTinySinglePrompt(benchmark::State& state) {
  const Predictor predictor = tiny_predictor();
  const Prompt prompt = grid_clicks(1).front();
  const bool multimask = state.range(0) != 0;
  for (auto _ : state) benchmark::DoNotOptimize(predictor.predict(prompt, multimask));
}
BENCHMARK(BM_DecoderTinySinglePrompt)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_DecoderTinyBatch(benchmark::State& state) {
  const Predictor predictor = tiny_predictor();
  const std::vector<Prompt> prompts = grid_clicks(static_cast<int>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(predictor.predict_batch(prompts, true));
  state.counters["ms_per_prompt"] = benchmark::Counter(
      static_cast<double>(state.range(0)), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_DecoderTinyBatch)->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime();

// What segment-everything runs: a batch without the masks at the original size
// (the generator scans the low-res logits upscaled on the fly).
void BM_DecoderTinyBatchLowRes(benchmark::State& state) {
  const Predictor predictor = tiny_predictor();
  const std::vector<Prompt> prompts = grid_clicks(static_cast<int>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(predictor.predict_batch_low_res(prompts, true));
  state.counters["ms_per_prompt"] = benchmark::Counter(
      static_cast<double>(state.range(0)), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_DecoderTinyBatchLowRes)->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime();

// load_checkpoint + Sam2Model construction of a Tiny safetensors file that is
// already in the page cache (written once, read once before timing).
void BM_LoadTinyCheckpoint(benchmark::State& state) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("sam2rt_bench_tiny_" + std::to_string(getpid()) + ".safetensors"))
          .string();
  const ModelConfig config = preset_config("tiny");
  {
    const WeightMap weights = synthetic_weights(config, 0);
    write_safetensors(path, NamedTensors(weights.all().begin(), weights.all().end()), {});
  }
  benchmark::DoNotOptimize(load_checkpoint(path));
  for (auto _ : state) benchmark::DoNotOptimize(Sam2Model(config, load_checkpoint(path)));
  std::filesystem::remove(path);
}
BENCHMARK(BM_LoadTinyCheckpoint)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace sam2rt
