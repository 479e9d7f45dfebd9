#include "model_options.h"

#include <omp.h>

#include <chrono>
#include <cstdio>

#include "backends/make_backend.h"
#include "compute_thread_placement.h"
#include "core/error.h"
#include "io/checkpoint.h"
#include "kernels/matmul.h"
#include "model/synthetic_weights.h"

namespace sam2rt::cli {

void ModelOptions::add_to(CLI::App& command) {
  auto* model = command.add_option("--model", model_path,
                                   "SAM 2.1 checkpoint: the official sam2.1_hiera_*.pt or a .safetensors")
                    ->check(CLI::Validator(
                        [](std::string& path) -> std::string {
                          const std::string problem = CLI::ExistingFile(path);
                          if (problem.empty()) return "";
                          return problem +
                                 " (get an official checkpoint with `sam2rt download tiny|small|base_plus|large`;"
                                 " links in models/README.md)";
                        },
                        "FILE"));
  auto* synthetic = command.add_option("--synthetic-weights", synthetic_salt,
                                       "run the architecture on deterministic generated weights with this salt "
                                       "(decimal or 0x hex) instead of a checkpoint; masks are meaningless")
                        ->type_name("SALT");
  model->excludes(synthetic);
  synthetic->excludes(model);
  auto* variant_opt = command.add_option("--variant", variant,
                                         "built-in architecture: tiny, small, base_plus, large (default: detected "
                                         "from the checkpoint's tensor shapes; tiny with --synthetic-weights)")
                          ->check(CLI::IsMember({"tiny", "small", "base_plus", "large"}));
  auto* config_opt = command.add_option("--config", config_path,
                                        "official-format SAM 2.1 YAML config (instead of --variant)")
                         ->check(CLI::ExistingFile);
  config_opt->excludes(variant_opt);
  command.add_option("--threads", threads, "worker threads (default: all cores)")->check(CLI::Range(1, 1024));
  command.add_option("--max-image-pixels", max_image_pixels,
                     "refuse larger images before decoding them")
      ->default_val(kDefaultMaxImagePixels)
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  command.add_option("--precision", precision,
                     "arithmetic of the image encoder: fp32 matches the reference; bf16 (--device cpu) is faster "
                     "but opt-in and not bit-faithful to the reference (masks near the threshold may differ); fp16 "
                     "(--device vulkan) stores weights and activations in fp16 on the GPU, computing in fp32 "
                     "(opt-in, not bit-faithful either)")
      ->default_val(precision_name(Precision::fp32))
      ->check(CLI::IsMember({precision_name(Precision::fp32), precision_name(Precision::bf16), "fp16"}));
}

void ModelOptions::add_device_to(CLI::App& command) {
  command.add_option("--device", device,
                     "where the model runs: cpu, or vulkan (a GPU through Vulkan): the image encoder, the mask "
                     "decoder of every prompt, reading the features the encoder left on the device, and in video "
                     "tracking the memory attention and memory encoder (the prompt encoder and the upscaling to the "
                     "image stay on the CPU)")
      ->default_val("cpu")
      ->check(CLI::IsMember({"cpu", "vulkan"}));
  command.add_option("--gpu-index", gpu_index, "with --device vulkan: which Vulkan device (0 = the first)")
      ->default_val(0)
      ->check(CLI::Range(0, 255));
}

std::shared_ptr<Backend> ModelOptions::backend() const {
  std::shared_ptr<Backend> chosen = make_backend(device, gpu_index, device_precision());
  if (chosen->records()) std::fprintf(stderr, "device: %s\n", chosen->description().c_str());
  return chosen;
}

ModelSource ModelOptions::source() const {
  ModelSource source;
  source.checkpoint_path = model_path;
  if (!synthetic_salt.empty()) source.synthetic_salt = parse_salt(synthetic_salt);
  source.variant = variant;
  source.config_path = config_path;
  if (source.checkpoint_path.empty() && !source.synthetic_salt) {
    throw Error("no weights given: pass --model sam2.1_hiera_tiny.pt (see README: where to download it) or "
                "--synthetic-weights 0 to run on generated weights");
  }
  return source;
}

std::shared_ptr<const Sam2Model> ModelOptions::load(bool video) const {
  encoder_precision();  // refuse a precision this CPU cannot run before loading anything
  if (threads > 0) omp_set_num_threads(threads);
  if (pins_compute_threads()) place_compute_threads(threads);
  const ModelSource src = source();
  std::shared_ptr<Backend> encoder_backend = backend();
  const auto start = std::chrono::steady_clock::now();
  std::shared_ptr<const Sam2Model> model;
  if (src.synthetic_salt) {
    model = Sam2Model::load(src, std::move(encoder_backend), video);
  } else {
    WeightMap weights = load_checkpoint(src.checkpoint_path);
    std::string detection;
    ModelConfig config = src.resolve_config(weights, &detection);
    if (!detection.empty()) std::fprintf(stderr, "%s\n", detection.c_str());
    model = std::make_shared<const Sam2Model>(std::move(config), std::move(weights), std::move(encoder_backend));
  }
  std::fprintf(stderr, "loaded %s in %.0f ms\n", src.describe(model->config()).c_str(), milliseconds_since(start));
  if (src.synthetic_salt) {
    std::fprintf(stderr,
                 "note: synthetic weights are for testing and benchmarking only; their masks are meaningless\n");
  }
  return model;
}

DevicePrecision ModelOptions::device_precision() const {
  return precision == "fp16" ? DevicePrecision::fp16 : DevicePrecision::fp32;
}

Precision ModelOptions::encoder_precision() const {
  if (precision == "fp16") {
    if (device == "cpu") throw Error("--precision fp16 runs on --device vulkan only; on the CPU use fp32 (or bf16)");
    return Precision::fp32;  // the arithmetic; the device stores fp16
  }
  const Precision chosen = parse_precision(precision);
  if (chosen == Precision::bf16 && device != "cpu") {
    throw Error("--precision bf16 runs on --device cpu only; use --precision fp32 with --device " + device);
  }
  if (chosen == Precision::bf16 && !bf16_matmul_supported()) {
    throw Error("--precision bf16: oneDNN cannot run bfloat16 on this CPU (it needs AVX-512); use --precision fp32");
  }
  return chosen;
}

double milliseconds_since(const std::chrono::steady_clock::time_point& start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace sam2rt::cli
