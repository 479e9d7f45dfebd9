#include <omp.h>
#include <sys/resource.h>
#include <time.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>

#include "api/automatic_mask_generator.h"
#include "api/predictor.h"
#include "commands.h"
#include "bench_video.h"
#include "compute_thread_placement.h"
#include "gemm_probe.h"
#include "core/tensor_compare.h"
#include "io/atomic_file.h"
#include "kernels/stage_profile.h"
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

double process_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) * 1e-6;
}

// Wall-clock times of `runs` calls after `warmup` untimed ones. With cpu_per_thread,
// also the process CPU time of each call divided by the thread count: on a shared
// machine that is what the wall time would be with the cores to ourselves (if
// the work is spread evenly), so it is reported next to it.
// after_each runs untimed after every call (warm-ups included).
TimingStats time_runs(int warmup, int runs, const std::function<void()>& body,
                      const std::function<void()>& after_warmup = [] {}, TimingStats* cpu_per_thread = nullptr,
                      const std::function<void()>& after_each = [] {}) {
  for (int i = 0; i < warmup; ++i) {
    body();
    after_each();
  }
  after_warmup();
  std::vector<double> samples, cpu_samples;
  for (int i = 0; i < runs; ++i) {
    const double cpu_start = process_cpu_ms();
    const auto start = std::chrono::steady_clock::now();
    body();
    samples.push_back(milliseconds_since(start));
    cpu_samples.push_back((process_cpu_ms() - cpu_start) / omp_get_max_threads());
    after_each();
  }
  if (cpu_per_thread) *cpu_per_thread = summarize(cpu_samples);
  return summarize(samples);
}

double median_of(std::vector<double> values) { return summarize(std::move(values)).median; }

void print_row(const char* what, const TimingStats& s) {
  std::printf("%-30s %9.2f %9.2f %9.2f %9.2f %9.2f  (%d runs)\n", what, s.min, s.median, s.mean, s.max, s.std, s.runs);
}

// IoU of the masks logits > 0 (an empty union counts as agreement).
double mask_iou(const Tensor& a, const Tensor& b) {
  int64_t both = 0, either = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const bool x = a[i] > 0.0f, y = b[i] > 0.0f;
    both += x && y;
    either += x || y;
  }
  return either == 0 ? 1.0 : static_cast<double>(both) / static_cast<double>(either);
}

// How far the bf16 encoder is from the fp32 one on this image: every output
// tensor and the thresholded masks of a few point prompts.
nlohmann::json print_fidelity(std::shared_ptr<const Sam2Model> model, const RgbImage& image, int prompt_count) {
  Predictor exact(model), fast(model);
  exact.set_image(image, {.neck_levels = true, .precision = Precision::fp32});
  fast.set_image(image, {.neck_levels = true, .precision = Precision::bf16});
  const EncoderOutputs& e = exact.encoder_outputs();
  const EncoderOutputs& f = fast.encoder_outputs();
  std::vector<std::pair<std::string, std::pair<const Tensor*, const Tensor*>>> tensors = {
      {"image_embed", {&e.decoder.image_embed, &f.decoder.image_embed}},
      {"feat_s1", {&e.decoder.feat_s1, &f.decoder.feat_s1}},
      {"feat_s0", {&e.decoder.feat_s0, &f.decoder.feat_s0}}};
  for (size_t i = 0; i < e.neck_levels.size(); ++i) {
    tensors.push_back({"neck.level" + std::to_string(i), {&e.neck_levels[i], &f.neck_levels[i]}});
  }
  nlohmann::json report = nlohmann::json::object();
  std::printf("\nbf16 vs fp32 %-18s %12s %12s\n", "", "1-cos", "max|err|");
  for (const auto& [name, pair] : tensors) {
    const TensorDifference a = compare_tensors(*pair.second, *pair.first);
    std::printf("  %-29s %12.3e %12.3e\n", name.c_str(), a.one_minus_cos, a.max_abs_err);
    report[name] = {{"one_minus_cos", a.one_minus_cos}, {"max_abs_err", a.max_abs_err}};
  }
  double worst_iou = 1.0;
  for (const Prompt& prompt : grid_prompts(prompt_count, image.width, image.height)) {
    const MaskPrediction a = exact.predict(prompt, true), b = fast.predict(prompt, true);
    for (int64_t m = 0; m < a.masks.dim(0); ++m) {
      const int64_t pixels = a.masks.numel() / a.masks.dim(0);
      const Tensor ma = Tensor::view({pixels}, const_cast<float*>(a.masks.data()) + m * pixels, nullptr);
      const Tensor mb = Tensor::view({pixels}, const_cast<float*>(b.masks.data()) + m * pixels, nullptr);
      worst_iou = std::min(worst_iou, mask_iou(ma, mb));
    }
  }
  std::printf("  %-29s %12.4f  (worst of %d point prompts x 3 masks)\n", "thresholded mask IoU", worst_iou,
              prompt_count);
  report["worst_mask_iou"] = worst_iou;
  return report;
}

struct BenchCommand {
  ModelOptions model;
  std::string image_path;
  int warmup = 5;
  int runs = 50;
  int batch = 64;
  bool encoder_only = false;
  std::string json_path;
  int everything_runs = 0;
  AmgParams everything;

  void run() const {
    if (model.threads > 0) omp_set_num_threads(model.threads);
    const bool pinned = model.pins_compute_threads() && place_compute_threads(model.threads);
    // Two steps, timed apart: getting the weights (generating synthetic ones is
    // real work that a checkpoint in the page cache does not cost) and building
    // the model from them (what "ready to run" costs either way).
    const ModelSource source = model.source();
    const ModelConfig source_config = source.resolve_config();
    auto start = std::chrono::steady_clock::now();
    WeightMap weights = Sam2Model::load_weights(source, source_config);
    const double weights_ms = milliseconds_since(start);
    start = std::chrono::steady_clock::now();
    const auto loaded = std::make_shared<const Sam2Model>(source_config, std::move(weights), model.backend());
    const double build_ms = milliseconds_since(start);
    const char* weights_label = source.synthetic_salt ? "generate synthetic weights" : "read checkpoint";
    const ModelConfig& config = loaded->config();
    const RgbImage image =
        image_path.empty() ? gradient_image(config.image_size) : decode_image_file(image_path, model.max_image_pixels);

    Predictor predictor(loaded);
    const std::string device = loaded->encoder().backend().description();
    std::printf("sam2rt bench: %s, %dx%d image, %s, %s, %d threads%s, %d warm-up + %d timed runs\n",
                model.source().describe().c_str(), image.width, image.height, model.precision.c_str(), device.c_str(),
                omp_get_max_threads(), pinned ? " (one per CPU, pinned)" : "", warmup, runs);
    const EncodeOptions options{.precision = model.encoder_precision()};
    // The first encode also makes the GEMM primitives (and converts the weights
    // for bf16) and faults in the scratch buffers; the warm-up runs absorb it.
    start = std::chrono::steady_clock::now();
    predictor.set_image(image, options);
    const double first_encode_ms = milliseconds_since(start);
    const bool on_device = loaded->encoder().backend().records();
    // On the CPU, the GEMM rate the encoder is held to, timed after each encode.
    std::optional<GemmProbe> gemm;
    if (!on_device) gemm.emplace(options.precision == Precision::bf16);
    TimingStats encoder_cpu;
    std::vector<double> upload_samples, device_samples, download_samples, encode_samples, gemm_samples;
    const TimingStats encoder = time_runs(
        warmup, runs,
        [&] {
          const auto encode_start = std::chrono::steady_clock::now();
          predictor.set_image(image, options);
          encode_samples.push_back(milliseconds_since(encode_start));
          const EncoderOutputs& encoded = predictor.encoder_outputs();
          upload_samples.push_back(encoded.upload_ms);
          device_samples.push_back(encoded.device_ms);
          download_samples.push_back(encoded.download_ms);
        },
        [&] {
          stage_profile_reset();
          upload_samples.clear(), device_samples.clear(), download_samples.clear();
          encode_samples.clear(), gemm_samples.clear();
        },
        &encoder_cpu, [&] {
          if (gemm) gemm_samples.push_back(gemm->gflops());
        });
    const ProgramStats ops = predictor.encoder_outputs().ops;
    if (stage_profile_enabled()) {
      std::printf("\n");
      stage_profile_print(stdout, runs, "encode");
    }

    const std::vector<Prompt> prompts = grid_prompts(batch, image.width, image.height);
    const int decoder_runs = std::max(runs, 20);
    TimingStats decoder, with_mask_input, batched;
    if (!encoder_only) {
      decoder = time_runs(
          warmup, decoder_runs, [&] { predictor.predict(prompts.front(), true); }, [] { stage_profile_reset(); });
      if (stage_profile_enabled()) {
        std::printf("\n");
        stage_profile_print(stdout, decoder_runs, "prompt decoded alone");
      }
      // The same click refined with its best mask's low-res logits as the mask
      // input (the predictor's iterative use, and segment-everything's use_m2m).
      Prompt refined = prompts.front();
      {
        const MaskPrediction first = predictor.predict(prompts.front(), false);
        refined.mask_input = first.low_res_masks.clone();
      }
      with_mask_input = time_runs(
          warmup, decoder_runs, [&] { predictor.predict(refined, false); }, [] { stage_profile_reset(); });
      if (stage_profile_enabled()) {
        std::printf("\n");
        stage_profile_print(stdout, decoder_runs, "prompt with a mask input");
      }
      batched = time_runs(
          warmup, runs, [&] { predictor.predict_batch(prompts, true); }, [] { stage_profile_reset(); });
      if (stage_profile_enabled()) {
        std::printf("\nCPU time of both threads (each decodes whole prompts of the batch)\n");
        stage_profile_print(stdout, runs * batch, "prompt of a batch");
      }
    }
    // Host<->device copies of one more image and one prompt on it (none on the CPU).
    const Backend& backend = loaded->encoder().backend();
    const TransferCounts before_image = backend.transfers();
    predictor.set_image(image, options);
    const TransferCounts after_image = backend.transfers();
    if (!encoder_only) predictor.predict(prompts.front(), true);
    const TransferCounts after_prompt = backend.transfers();
    // Of that decode (a one-point prompt of the batch), then of the batch's last program.
    const ProgramStats decoder_ops = loaded->heads().device_decoder_ops();
    if (!encoder_only) predictor.predict_batch(prompts, true);
    const TransferCounts after_batch = backend.transfers();
    const ProgramStats batch_ops = loaded->heads().device_decoder_ops();
    auto between = [](const TransferCounts& from, const TransferCounts& to) {
      return TransferCounts{to.uploads - from.uploads, to.downloads - from.downloads,
                            to.submissions - from.submissions};
    };
    const TransferCounts image_transfers = between(before_image, after_image);
    const TransferCounts prompt_transfers = between(after_image, after_prompt);
    const TransferCounts batch_transfers = between(after_prompt, after_batch);
    const bool decoder_on_device = loaded->heads().decodes_on_device();
    TimingStats everything_stats;
    size_t everything_masks = 0;
    if (everything_runs > 0) {
      // The whole generator on the image, encoder(s) included; one warm-up run.
      const AutomaticMaskGenerator generator(loaded, everything, options);
      everything_stats = time_runs(
          std::min(warmup, 1), everything_runs, [&] { everything_masks = generator.generate(image).size(); },
          [] { stage_profile_reset(); });
      if (stage_profile_enabled()) {
        std::printf("\n");
        stage_profile_print(stdout, everything_runs, "everything run");
      }
    }
    auto scale = [&](TimingStats s) {
      const double k = 1.0 / static_cast<double>(batch);
      s.min *= k, s.median *= k, s.mean *= k, s.max *= k, s.std *= k;
      return s;
    };
    const TimingStats batched_per_prompt = scale(batched);

    const EncoderCost cost = encoder_cost(config);
    const double gflops = 2.0 * static_cast<double>(cost.total()) / (encoder.median * 1e6);
    // Each encode's rate over the GEMM timing right after it; the executed
    // work's share scales it.
    std::vector<double> of_gemm;
    for (size_t i = 0; i < gemm_samples.size() && i < encode_samples.size(); ++i) {
      of_gemm.push_back(2.0 * static_cast<double>(cost.total()) / (encode_samples[i] * 1e6) / gemm_samples[i]);
    }
    const bool paired = !of_gemm.empty();
    const double gemm_gflops = paired ? median_of(gemm_samples) : 0.0, encoder_of_gemm = paired ? median_of(of_gemm) : 0.0;
    const double executed_of_gemm =
        encoder_of_gemm * static_cast<double>(cost.executed()) / static_cast<double>(cost.total());
    const double rss = peak_rss_mb();

    std::printf("\n%-30s %9s %9s %9s %9s %9s\n", "ms", "min", "median", "mean", "max", "std");
    print_row("encoder", encoder);
    print_row("encoder CPU time / threads", encoder_cpu);
    if (on_device) {
      print_row("  upload image", summarize(upload_samples));
      print_row("  encode on device", summarize(device_samples));
      print_row("  download features", summarize(download_samples));
    }
    char label[64];
    if (!encoder_only) {
      print_row("decoder, 1 prompt", decoder);
      print_row("decoder, 1 + mask input", with_mask_input);
      std::snprintf(label, sizeof label, "decoder, per prompt of %d", batch);
      print_row(label, batched_per_prompt);
    }
    if (everything_runs > 0) {
      std::snprintf(label, sizeof label, "everything %dx%d, %d crop layers", everything.points_per_side.value_or(0),
                    everything.points_per_side.value_or(0), everything.crop_n_layers);
      print_row(label, everything_stats);
      std::printf("%-30s %zu masks (pred_iou_thresh %g, stability_score_thresh %g)\n", "", everything_masks,
                  everything.pred_iou_thresh, everything.stability_score_thresh);
    }
    std::printf("\nload: %-30s %9.1f ms\n", weights_label, weights_ms);
    std::printf("%-36s %9.1f ms\n", "load: build model (ready to run)", build_ms);
    std::printf("%-36s %9.1f ms\n", "load: total", weights_ms + build_ms);
    std::printf("%-36s %9.1f ms\n", "first encode (+ making primitives)", first_encode_ms);
    std::printf("encoder work    %.1f GMAC (linear %.1f, attention %.1f, patch embed %.1f, neck %.1f) as the official "
                "model counts it; %.1f executed here (model/encoder_cost.h)\n",
                static_cast<double>(cost.total()) * 1e-9, static_cast<double>(cost.linear) * 1e-9,
                static_cast<double>(cost.attention) * 1e-9, static_cast<double>(cost.patch_embed) * 1e-9,
                static_cast<double>(cost.neck) * 1e-9, static_cast<double>(cost.executed()) * 1e-9);
    std::printf("encoder speed   %.1f GFLOP/s (2 x MACs / median time)\n", gflops);
    if (paired) {
      std::printf("GEMM rate       %.1f GFLOP/s (oneDNN %s, %lld x %lld -> %lld, median of a timing after each encode)\n",
                  gemm_gflops, options.precision == Precision::bf16 ? "bf16" : "fp32",
                  static_cast<long long>(GemmProbe::kRows), static_cast<long long>(GemmProbe::kIn),
                  static_cast<long long>(GemmProbe::kOut));
      std::printf("encoder / GEMM  %.1f%% of the model's work, %.1f%% of the executed (median of each encode's rate "
                  "over the GEMM timing after it)\n",
                  100.0 * encoder_of_gemm, 100.0 * executed_of_gemm);
    }
    std::printf("encoder ops     %lld total, %lld on device (%s)", static_cast<long long>(ops.ops),
                static_cast<long long>(ops.ops_on_device), device.c_str());
    if (on_device) std::printf(", %lld dispatches", static_cast<long long>(ops.dispatches));
    std::printf("\n");
    if (!encoder_only && decoder_on_device) {
      std::printf("decoder ops     %lld total, %lld on device (%s), %lld dispatches per prompt\n",
                  static_cast<long long>(decoder_ops.ops), static_cast<long long>(decoder_ops.ops_on_device),
                  device.c_str(), static_cast<long long>(decoder_ops.dispatches));
    } else if (!encoder_only) {
      std::printf("decoder ops     on the CPU\n");
    }
    if (on_device) {
      std::printf("transfers       per image (set_image) %lld upload(s), %lld download(s)",
                  static_cast<long long>(image_transfers.uploads), static_cast<long long>(image_transfers.downloads));
      if (!encoder_only) {
        std::printf("; per prompt %lld upload(s), %lld download(s)", static_cast<long long>(prompt_transfers.uploads),
                    static_cast<long long>(prompt_transfers.downloads));
      }
      std::printf("\n");
      if (!encoder_only && decoder_on_device) {
        std::printf("                per batch of %d prompts %lld submission(s), %lld upload(s), %lld download(s) "
                    "(at most %lld prompts per submission; the last program %lld dispatches)\n",
                    batch, static_cast<long long>(batch_transfers.submissions),
                    static_cast<long long>(batch_transfers.uploads), static_cast<long long>(batch_transfers.downloads),
                    static_cast<long long>(loaded->heads().device_decoder_max_batch()),
                    static_cast<long long>(batch_ops.dispatches));
      }
    }
    std::printf("peak RSS        %.0f MB\n", rss);
    const nlohmann::json fidelity =
        options.precision == Precision::bf16 ? print_fidelity(loaded, image, 4) : nlohmann::json();

    if (!json_path.empty()) {
      nlohmann::json report = {{"variant", config.name},
                               {"precision", model.precision},
                               {"device", device},
                               {"ops_total", ops.ops},
                               {"ops_on_device", ops.ops_on_device},
                               {"threads", omp_get_max_threads()},
                               {"threads_pinned", pinned},
                               {"image", image_path.empty() ? "synthetic gradient" : image_path},
                               {"image_width", image.width},
                               {"image_height", image.height},
                               {source.synthetic_salt ? "generate_weights_ms" : "read_checkpoint_ms", weights_ms},
                               {"build_model_ms", build_ms},
                               {"load_ms", weights_ms + build_ms},
                               {"first_encode_ms", first_encode_ms},
                               {"encoder_ms", to_json(encoder)},
                               {"encoder_cpu_ms_per_thread", to_json(encoder_cpu)},
                               {"decoder_ms", to_json(decoder)},
                               {"decoder_mask_input_ms", to_json(with_mask_input)},
                               {"decoder_batch" + std::to_string(batch) + "_ms_per_prompt", to_json(batched_per_prompt)},
                               {"encoder_gmac", static_cast<double>(cost.total()) * 1e-9},
                               {"encoder_gmac_executed", static_cast<double>(cost.executed()) * 1e-9},
                               {"encoder_gflops", gflops},
                               {"peak_rss_mb", rss}};
      if (!encoder_only) {
        report["decoder_ops_on_device"] = decoder_ops.ops_on_device;
        if (decoder_on_device) {
          report["decoder_ops_total"] = decoder_ops.ops;
          report["decoder_device_dispatches"] = decoder_ops.dispatches;
        }
      }
      if (encoder_only) {
        report.erase("decoder_ms");
        report.erase("decoder_mask_input_ms");
        report.erase("decoder_batch" + std::to_string(batch) + "_ms_per_prompt");
      }
      if (paired) {
        report["gemm_gflops"] = gemm_gflops;
        report["encoder_of_gemm"] = encoder_of_gemm;
        report["encoder_executed_of_gemm"] = executed_of_gemm;
      }
      if (!fidelity.is_null()) report["bf16_vs_fp32"] = fidelity;
      if (on_device) {
        report["device_dispatches"] = ops.dispatches;
        report["uploads_per_image"] = image_transfers.uploads;
        report["downloads_per_image"] = image_transfers.downloads;
        if (!encoder_only) {
          report["decoder_uploads_per_prompt"] = prompt_transfers.uploads;
          report["decoder_downloads_per_prompt"] = prompt_transfers.downloads;
          if (decoder_on_device) {
            report["decoder_batch_prompts"] = batch;
            report["decoder_batch_submissions"] = batch_transfers.submissions;
            report["decoder_batch_uploads"] = batch_transfers.uploads;
            report["decoder_batch_downloads"] = batch_transfers.downloads;
            report["decoder_max_prompts_per_submission"] = loaded->heads().device_decoder_max_batch();
            report["decoder_batch_program_dispatches"] = batch_ops.dispatches;
          }
        }
        report["upload_ms"] = to_json(summarize(upload_samples));
        report["device_encode_ms"] = to_json(summarize(device_samples));
        report["download_ms"] = to_json(summarize(download_samples));
      }
      if (everything_runs > 0) {
        report["everything_ms"] = to_json(everything_stats);
        report["everything"] = {{"points_per_side", everything.points_per_side.value_or(0)},
                                {"crop_n_layers", everything.crop_n_layers},
                                {"crop_n_points_downscale_factor", everything.crop_n_points_downscale_factor},
                                {"pred_iou_thresh", everything.pred_iou_thresh},
                                {"stability_score_thresh", everything.stability_score_thresh},
                                {"masks", everything_masks}};
      }
      write_file_atomically(json_path, report.dump(2) + "\n");
    }
  }
};

}  // namespace

void register_bench(CLI::App& app) {
  auto command = std::make_shared<BenchCommand>();
  CLI::App* sub = app.add_subcommand(
      "bench",
      "Time model load, encoder and decoder; report GFLOP/s and peak RSS.\n"
      "Benchmark load, encoder and decoder (warm-up runs, then timed runs; min/median/mean/max/std), achieved "
      "GFLOP/s of the encoder and peak RSS. With --device vulkan also the ops on the device and the host<->device "
      "transfers of an image (set_image) and of a prompt. With --precision bf16 also the bf16-vs-fp32 fidelity table. "
      "SAM2RT_PROFILE=1 adds a per-stage breakdown of the encoder, the decoder and the everything runs.");
  command->model.add_to(*sub);
  command->model.add_device_to(*sub);
  sub->add_option("--image", command->image_path, "photo to encode (default: a synthetic gradient at the model's size)")
      ->check(CLI::ExistingFile);
  sub->add_option("--warmup", command->warmup, "untimed runs first")->default_val(5)->check(CLI::Range(0, 1000));
  sub->add_option("--runs", command->runs, "timed runs")->default_val(50)->check(CLI::Range(1, 100000));
  sub->add_option("--batch", command->batch, "prompts in the batched decoder run")->default_val(64)->check(CLI::Range(1, 1024));
  sub->add_flag("--encoder-only", command->encoder_only, "time the encoder only (skip the decoder runs)");
  sub->add_option("--json", command->json_path, "also write the results as JSON");
  AmgParams& amg = command->everything;
  sub->add_option("--everything-runs", command->everything_runs,
                  "also time segment-everything on the image this many times (0 = skip)")
      ->default_val(0)
      ->check(CLI::Range(0, 1000));
  sub->add_option("--points-per-side", *amg.points_per_side, "segment-everything grid")->capture_default_str();
  sub->add_option("--crop-n-layers", amg.crop_n_layers, "segment-everything crop layers")->capture_default_str();
  sub->add_option("--crop-n-points-downscale-factor", amg.crop_n_points_downscale_factor,
                  "segment-everything points downscale per crop layer")
      ->capture_default_str();
  sub->add_option("--pred-iou-thresh", amg.pred_iou_thresh,
                  "segment-everything IoU filter (0 sends every candidate through the full post-processing)")
      ->capture_default_str();
  sub->add_option("--stability-score-thresh", amg.stability_score_thresh, "segment-everything stability filter")
      ->capture_default_str();
  auto video = std::make_shared<VideoBench>();
  sub->add_option("--video", video->video_path,
                  "time video tracking instead: a folder of JPEG frames or a video file (one object, a click on "
                  "frame 0, tracked through the video; --warmup frames untimed)")
      ->check(CLI::ExistingPath);
  sub->add_option("--video-point", video->point, "the click on frame 0 as X,Y in the video's pixels (default: centre)");
  sub->add_option("--video-frames", video->frames, "track at most this many frames (default: the whole video)")
      ->check(CLI::Range(0, 1000000));
  sub->callback([command, video] {
    if (!video->video_path.empty()) {
      video->warmup = command->warmup;
      video->json_path = command->json_path;
      video->run(command->model);
      return;
    }
    validate_amg_params(command->everything);
    command->run();
  });
}

}  // namespace sam2rt::cli
