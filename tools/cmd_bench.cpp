#include <omp.h>
#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>

#include "api/predictor.h"
#include "commands.h"
#include "io/atomic_file.h"
#include "model/encoder_cost.h"
#include "model_options.h"
#include "timing_stats.h"

namespace sam2rt::cli {

namespace {

double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

// A smooth colour gradient: a deterministic stand-in photo when --image is not given.
RgbImage gradient_image(int size) {
  RgbImage image;
  image.width = image.height = size;
  image.pixels.resize(static_cast<size_t>(size) * size * 3);
  for (int y = 0; y < size; ++y)
    for (int x = 0; x < size; ++x) {
      uint8_t* p = &image.pixels[(static_cast<size_t>(y) * size + x) * 3];
      p[0] = static_cast<uint8_t>(255 * x / size);
      p[1] = static_cast<uint8_t>(255 * y / size);
      p[2] = static_cast<uint8_t>((x ^ y) & 0xff);
    }
  return image;
}

std::vector<Prompt> grid_prompts(int count, int width, int height) {
  std::vector<Prompt> prompts;
  const int side = static_cast<int>(std::ceil(std::sqrt(count)));
  for (int i = 0; i < count; ++i) {
    Prompt p;
    p.points.push_back({(static_cast<float>(i % side) + 0.5f) * static_cast<float>(width) / static_cast<float>(side),
                        (static_cast<float>(i / side) + 0.5f) * static_cast<float>(height) / static_cast<float>(side),
                        1});
    prompts.push_back(p);
  }
  return prompts;
}

TimingStats time_runs(int warmup, int runs, const std::function<void()>& body) {
  for (int i = 0; i < warmup; ++i) body();
  std::vector<double> samples;
  for (int i = 0; i < runs; ++i) {
    const auto start = std::chrono::steady_clock::now();
    body();
    samples.push_back(milliseconds_since(start));
  }
  return summarize(samples);
}

void print_row(const char* what, const TimingStats& s) {
  std::printf("%-30s %9.2f %9.2f %9.2f %9.2f %9.2f  (%d runs)\n", what, s.min, s.median, s.mean, s.max, s.std, s.runs);
}

struct BenchCommand {
  ModelOptions model;
  std::string image_path;
  int warmup = 5;
  int runs = 50;
  int batch = 64;
  std::string precision = "fp32";
  std::string json_path;

  void run() const {
    const auto load_start = std::chrono::steady_clock::now();
    auto loaded = model.load();
    const double load_ms = milliseconds_since(load_start);
    const ModelConfig& config = loaded->config();
    const RgbImage image =
        image_path.empty() ? gradient_image(config.image_size) : decode_image_file(image_path, model.max_image_pixels);

    Predictor predictor(loaded);
    std::printf("sam2rt bench: %s, %dx%d image, %s, %d threads, %d warm-up + %d timed runs\n",
                model.source().describe().c_str(), image.width, image.height, precision.c_str(), omp_get_max_threads(),
                warmup, runs);
    const TimingStats encoder = time_runs(warmup, runs, [&] { predictor.set_image(image); });

    const std::vector<Prompt> prompts = grid_prompts(batch, image.width, image.height);
    const int decoder_runs = std::max(runs, 20);
    const TimingStats decoder = time_runs(warmup, decoder_runs, [&] { predictor.predict(prompts.front(), true); });
    const TimingStats batched = time_runs(warmup, runs, [&] { predictor.predict_batch(prompts, true); });
    auto scale = [&](TimingStats s) {
      const double k = 1.0 / static_cast<double>(batch);
      s.min *= k, s.median *= k, s.mean *= k, s.max *= k, s.std *= k;
      return s;
    };
    const TimingStats batched_per_prompt = scale(batched);

    const EncoderCost cost = encoder_cost(config);
    const double gflops = 2.0 * static_cast<double>(cost.total()) / (encoder.median * 1e6);
    const double rss = peak_rss_mb();

    std::printf("\n%-30s %9s %9s %9s %9s %9s\n", "ms", "min", "median", "mean", "max", "std");
    print_row("encoder", encoder);
    print_row("decoder, 1 prompt", decoder);
    char label[64];
    std::snprintf(label, sizeof label, "decoder, per prompt of %d", batch);
    print_row(label, batched_per_prompt);
    std::printf("\nload            %.1f ms\n", load_ms);
    std::printf("encoder work    %.1f GMAC (linear %.1f, attention %.1f, patch embed %.1f, neck %.1f)\n",
                static_cast<double>(cost.total()) * 1e-9, static_cast<double>(cost.linear) * 1e-9,
                static_cast<double>(cost.attention) * 1e-9, static_cast<double>(cost.patch_embed) * 1e-9,
                static_cast<double>(cost.neck) * 1e-9);
    std::printf("encoder speed   %.1f GFLOP/s (2 x MACs / median time)\n", gflops);
    std::printf("peak RSS        %.0f MB\n", rss);

    if (!json_path.empty()) {
      nlohmann::json report = {{"variant", config.name},
                               {"precision", precision},
                               {"threads", omp_get_max_threads()},
                               {"image", image_path.empty() ? "synthetic gradient" : image_path},
                               {"image_width", image.width},
                               {"image_height", image.height},
                               {"load_ms", load_ms},
                               {"encoder_ms", to_json(encoder)},
                               {"decoder_ms", to_json(decoder)},
                               {"decoder_batch" + std::to_string(batch) + "_ms_per_prompt", to_json(batched_per_prompt)},
                               {"encoder_gmac", static_cast<double>(cost.total()) * 1e-9},
                               {"encoder_gflops", gflops},
                               {"peak_rss_mb", rss}};
      write_file_atomically(json_path, report.dump(2) + "\n");
    }
  }
};

}  // namespace

void register_bench(CLI::App& app) {
  auto command = std::make_shared<BenchCommand>();
  CLI::App* sub = app.add_subcommand(
      "bench",
      "Benchmark load, encoder and decoder (warm-up runs, then timed runs; min/median/mean/max/std), achieved "
      "GFLOP/s of the encoder and peak RSS.");
  command->model.add_to(*sub);
  sub->add_option("--image", command->image_path, "photo to encode (default: a synthetic gradient at the model's size)")
      ->check(CLI::ExistingFile);
  sub->add_option("--warmup", command->warmup, "untimed runs first")->default_val(5)->check(CLI::Range(0, 1000));
  sub->add_option("--runs", command->runs, "timed runs")->default_val(50)->check(CLI::Range(1, 100000));
  sub->add_option("--batch", command->batch, "prompts in the batched decoder run")->default_val(64)->check(CLI::Range(1, 1024));
  sub->add_option("--precision", command->precision, "arithmetic of the encoder")
      ->default_val("fp32")
      ->check(CLI::IsMember({"fp32"}));
  sub->add_option("--json", command->json_path, "also write the results as JSON");
  sub->callback([command] { command->run(); });
}

}  // namespace sam2rt::cli
