#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>

#include "api/sam2_model.h"
#include "backends/backend.h"
#include "backends/device_precision.h"
#include "backends/op_types.h"
#include "io/image.h"

namespace sam2rt::cli {

// The flags every model-running command shares:
//   (--model FILE | --synthetic-weights SALT) [--variant V | --config Y] [--threads N]
//   [--max-image-pixels N] [--precision fp32|bf16|fp16]
// and, on the commands that register them (add_device_to), [--device cpu|vulkan] [--gpu-index N].
struct ModelOptions {
  std::string model_path;
  std::string synthetic_salt;
  std::string variant;  // empty: detected from the checkpoint (tiny for synthetic weights)
  std::string config_path;
  int threads = 0;
  int64_t max_image_pixels = kDefaultMaxImagePixels;
  std::string precision = precision_name(Precision::fp32);
  std::string device = "cpu";
  int gpu_index = 0;
  // One CPU per compute thread (compute_thread_placement.h); `serve` turns it
  // off: each of its request threads leads a team of its own.
  bool pin_compute_threads = true;
  // Whether to pin: on the CPU device only. A Vulkan driver that computes on
  // the CPU (lavapipe) starts its workers from the pinned main thread, and they
  // inherit its one CPU: the micro m2m case ran on one core there (21.9 s wall,
  // 21.8 s CPU).
  bool pins_compute_threads() const { return pin_compute_threads && device == "cpu"; }

  void add_to(CLI::App& command);
  void add_device_to(CLI::App& command);
  // Where the image encoder runs (--device, --gpu-index); Error with one line
  // when that device cannot be used.
  std::shared_ptr<Backend> backend() const;
  ModelSource source() const;
  // The arithmetic of the image encoder (--precision; fp16 is fp32 arithmetic on
  // fp16 storage, see device_precision); Error when this CPU or --device cannot
  // run it.
  Precision encoder_precision() const;
  // How a device stores tensors and weights: fp16 with --precision fp16.
  DevicePrecision device_precision() const;
  // Applies --threads (and the thread placement), loads and validates the model; prints what was loaded (the
  // variant detected from the checkpoint, and a warning that synthetic weights
  // give meaningless masks) to stderr. `video`: generated weights include the
  // video modules' (Sam2Model::load).
  std::shared_ptr<const Sam2Model> load(bool video = false) const;
};

double milliseconds_since(const std::chrono::steady_clock::time_point& start);

}  // namespace sam2rt::cli
