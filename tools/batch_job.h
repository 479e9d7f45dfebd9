#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

namespace sam2rt::cli {

// One input of a batch and the file its result goes to.
struct BatchItem {
  std::string input;
  std::string output;
};

// The one-machine batch mode of `encode` and `everything`:
//   --input-dir DIR | --input-list FILE, --out-dir OUT, [--overwrite]
// Outputs are written atomically, so a rerun skips every output that exists
// (it is complete) and redoes the missing ones (removing the temporary files a
// killed run left beside them); OUT/manifest.jsonl records each
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

// What a batch does to one item, in three steps, each on its own thread, so that
// reading the next input and writing the last output overlap the computation of
// the current one (which keeps the compute threads of --threads):
//   read    (reader thread): decode and prepare the input, return the computation;
//   compute (the calling thread): the model's work, return the write;
//   write   (writer thread): the output file, written atomically.
// The reader runs at most two inputs ahead (the memory in flight stays bounded).
using BatchWrite = std::function<void()>;
using BatchCompute = std::function<BatchWrite()>;
using BatchRead = std::function<BatchCompute(const BatchItem&)>;

// Runs the steps for every item whose output is missing (all with overwrite). A
// failing item (corrupt or too large image, any Error) is recorded and the batch
// goes on. Prints progress (a bar with images/s and ETA on a terminal, plain lines
// otherwise), writes OUT/manifest.jsonl (ms: the item's time in its three steps)
// and returns the number of failures.
int run_batch(const BatchOptions& options, const std::vector<BatchItem>& items, const BatchRead& read);

}  // namespace sam2rt::cli
