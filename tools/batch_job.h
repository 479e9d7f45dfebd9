#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

#include "io/image.h"

namespace sam2rt::cli {

// One input of a batch and the file its result goes to.
struct BatchItem {
  std::string input;
  std::string output;
};

// The one-machine batch mode of `encode` and `everything`:
//   --input-dir DIR | --input-list FILE, --out-dir OUT, [--overwrite]
// Outputs are written atomically, so a rerun skips every output that exists
// (it is complete) and redoes the missing ones; OUT/manifest.jsonl records each
// input (input, output, status ok|skipped|error, ms, error).
struct BatchOptions {
  std::string input_dir;
  std::string input_list;
  std::string out_dir;
  bool overwrite = false;

  // Adds the options; `single_image` (--image) and the batch inputs exclude each other.
  void add_to(CLI::App& command, CLI::Option* single_image);
  bool active() const { return !input_dir.empty() || !input_list.empty(); }
  // The inputs in a stable order, each with OUT/<path relative to DIR, or the
  // file name for a list, with `extension` instead of its own>. Error for an
  // empty input set or two inputs that would share an output.
  std::vector<BatchItem> items(const std::string& extension) const;
};

// Runs `work(image, item)` for every item whose output is missing (all with
// overwrite), decoding the next image on another thread meanwhile. A failing
// item (corrupt or too large image, any Error) is recorded and the batch goes
// on. Prints progress (a bar with images/s and ETA on a terminal, plain lines
// otherwise), writes OUT/manifest.jsonl and returns the number of failures.
int run_batch(const BatchOptions& options, const std::vector<BatchItem>& items, int64_t max_pixels,
              const std::function<void(const RgbImage&, const BatchItem&)>& work);

}  // namespace sam2rt::cli
