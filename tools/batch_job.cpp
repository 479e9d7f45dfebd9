#include "batch_job.h"

#include <omp.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <thread>

#include "bounded_queue.h"
#include "compute_thread_placement.h"
#include "core/error.h"
#include "io/atomic_file.h"
#include "model_options.h"

namespace sam2rt::cli {

namespace fs = std::filesystem;

namespace {

bool is_image_name(const fs::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext == ".png" || ext == ".jpg" || ext == ".jpeg";
}

std::string duration_text(double seconds) {
  char text[32];
  const auto s = static_cast<long long>(seconds);
  if (s >= 3600) {
    std::snprintf(text, sizeof text, "%lldh%02lldm", s / 3600, (s / 60) % 60);
  } else {
    std::snprintf(text, sizeof text, "%lldm%02llds", s / 60, s % 60);
  }
  return text;
}

class BatchProgress {
 public:
  explicit BatchProgress(size_t total)
      : total_(total), terminal_(isatty(STDERR_FILENO) != 0), start_(std::chrono::steady_clock::now()) {}

  void update(size_t done, size_t processed, size_t failed) {
    const double seconds = milliseconds_since(start_) / 1000.0;
    const double rate = seconds > 0 ? static_cast<double>(processed) / seconds : 0.0;
    const double eta = rate > 0 ? static_cast<double>(total_ - done) / rate : 0.0;
    if (terminal_) {
      constexpr int kWidth = 30;
      const int filled = static_cast<int>(kWidth * done / std::max<size_t>(total_, 1));
      std::fprintf(stderr, "\r[%s%s] %zu/%zu, %.2f images/s, ETA %s, %zu failed ", std::string(filled, '#').c_str(),
                   std::string(kWidth - filled, '.').c_str(), done, total_, rate, duration_text(eta).c_str(), failed);
      if (done == total_) std::fputc('\n', stderr);
    } else if (done == total_ || seconds - last_line_seconds_ >= kSecondsBetweenLines) {
      // A log, not a display: a line every few seconds however many images there are.
      last_line_seconds_ = seconds;
      std::fprintf(stderr, "batch: %zu/%zu done, %.2f images/s, ETA %s, %zu failed\n", done, total_, rate,
                   duration_text(eta).c_str(), failed);
    }
    std::fflush(stderr);
  }

 private:
  static constexpr double kSecondsBetweenLines = 2.0;
  size_t total_;
  bool terminal_;
  std::chrono::steady_clock::time_point start_;
  double last_line_seconds_ = 0;
};

}  // namespace

void BatchOptions::add_to(CLI::App& command, CLI::Option* single_image) {
  auto* dir = command.add_option("--input-dir", input_dir,
                                 "batch mode: every PNG/JPEG under this folder (recursively)")
                  ->check(CLI::ExistingDirectory);
  auto* list = command.add_option("--input-list", input_list, "batch mode: a text file with one image path per line")
                   ->check(CLI::ExistingFile);
  dir->excludes(list)->excludes(single_image);
  list->excludes(single_image);
  command.add_flag("--overwrite", overwrite, "batch mode: redo every input, even those whose output exists");
}

std::vector<BatchItem> BatchOptions::items(const std::string& extension) const {
  if (out_dir.empty()) throw Error("batch mode (--input-dir/--input-list) needs --out-dir for its outputs");
  std::vector<std::pair<std::string, fs::path>> inputs;  // input, output relative to out_dir
  if (!input_dir.empty()) {
    std::error_code error;
    for (fs::recursive_directory_iterator it(input_dir, error), end; !error && it != end; it.increment(error)) {
      if (!it->is_regular_file() || !is_image_name(it->path())) continue;
      const fs::path relative = fs::relative(it->path(), input_dir);
      inputs.emplace_back(it->path().string(), fs::path(relative).replace_extension(extension));
    }
    if (error) throw Error("--input-dir '" + input_dir + "': " + error.message());
  } else {
    std::ifstream in(input_list);
    if (!in) throw Error("--input-list '" + input_list + "': cannot open the file");
    for (std::string line; std::getline(in, line);) {
      while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
      if (line.empty() || line.front() == '#') continue;
      inputs.emplace_back(line, fs::path(line).filename().replace_extension(extension));
    }
  }
  if (inputs.empty()) {
    throw Error("no images to process: " +
                (input_dir.empty() ? "--input-list '" + input_list + "' names none"
                                   : "no .png/.jpg/.jpeg files under --input-dir '" + input_dir + "'"));
  }
  std::sort(inputs.begin(), inputs.end());
  std::map<fs::path, std::string> owner;
  std::vector<BatchItem> items;
  for (const auto& [input, relative] : inputs) {
    const auto [it, fresh] = owner.emplace(relative, input);
    if (!fresh) {
      throw Error("inputs '" + it->second + "' and '" + input + "' would both write '" + relative.string() +
                  "'; rename one or use --input-dir");
    }
    items.push_back({input, (fs::path(out_dir) / relative).string()});
  }
  return items;
}

namespace {

// An item on its way through the steps: what is left to do, or its error.
template <class Next>
struct InFlight {
  size_t index = 0;  // into the items
  double read_ms = 0;
  double compute_ms = 0;
  std::string error;
  Next next;
};

// Deletes the temporaries (OUTPUT.tmp.XXXXXX, see AtomicFile) that a run killed
// mid-write left beside these outputs: one pass over each output folder.
void remove_stale_temporaries(const std::vector<BatchItem>& items, const std::vector<size_t>& indices) {
  std::map<fs::path, std::set<std::string>> names_by_folder;
  for (const size_t i : indices) {
    const fs::path output(items[i].output);
    names_by_folder[output.parent_path()].insert(output.filename().string());
  }
  constexpr std::string_view kTemporary = ".tmp.XXXXXX";
  for (const auto& [folder, names] : names_by_folder) {
    std::error_code error;
    for (fs::directory_iterator it(folder.empty() ? fs::path(".") : folder, error), end; !error && it != end;
         it.increment(error)) {
      const std::string name = it->path().filename().string();
      if (name.size() <= kTemporary.size()) continue;
      const size_t stem = name.size() - kTemporary.size();
      if (name.compare(stem, 5, ".tmp.") != 0 || !names.contains(name.substr(0, stem))) continue;
      std::error_code ignored;  // gone already, or not ours to remove: nothing to do
      fs::remove(it->path(), ignored);
    }
  }
}

// The reader and writer threads do little arithmetic: one OpenMP thread each, so
// that the compute threads keep the cores, and free to run on any CPU (not only
// on the pinned main thread's).
void start_helper_thread() {
  omp_set_num_threads(1);
  let_thread_run_anywhere();
}

}  // namespace

int run_batch(const BatchOptions& options, const std::vector<BatchItem>& items, const BatchRead& read) {
  std::error_code error;
  fs::create_directories(options.out_dir, error);
  if (error) throw Error("--out-dir '" + options.out_dir + "': cannot create it (" + error.message() + ")");
  const std::string manifest_path = (fs::path(options.out_dir) / "manifest.jsonl").string();
  AtomicFile manifest(manifest_path);  // fails now, before any work, if OUT is not writable

  std::vector<size_t> todo;
  std::vector<nlohmann::json> records(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    if (!options.overwrite && fs::exists(items[i].output)) {
      records[i] = {{"input", items[i].input}, {"output", items[i].output}, {"status", "skipped"}};
    } else {
      todo.push_back(i);
    }
  }
  std::fprintf(stderr, "batch: %zu images, %zu to do, %zu already done (--overwrite redoes them)\n", items.size(),
               todo.size(), items.size() - todo.size());

  BoundedQueue<InFlight<BatchCompute>> read_queue(1);
  BoundedQueue<InFlight<BatchWrite>> write_queue(1);
  size_t failed = 0;
  double stage_ms[3] = {0, 0, 0};  // read, compute, write: summed over the items processed
  std::jthread reader([&] {
    start_helper_thread();
    for (const size_t index : todo) {
      InFlight<BatchCompute> next;
      next.index = index;
      const auto start = std::chrono::steady_clock::now();
      try {
        next.next = read(items[index]);
      } catch (const std::exception& e) {
        next.error = e.what();
      }
      next.read_ms = milliseconds_since(start);
      if (!read_queue.push(std::move(next))) return;
    }
    read_queue.close();
  });
  std::jthread writer([&] {
    start_helper_thread();
    BatchProgress progress(items.size());
    size_t done = items.size() - todo.size(), processed = 0;
    while (std::optional<InFlight<BatchWrite>> item = write_queue.pop()) {
      const BatchItem& batch_item = items[item->index];
      const auto start = std::chrono::steady_clock::now();
      if (item->error.empty()) {
        try {
          std::error_code ignored;  // a folder that cannot be made fails the write, with its reason
          fs::create_directories(fs::path(batch_item.output).parent_path(), ignored);
          item->next();
        } catch (const std::exception& e) {
          item->error = e.what();
        }
      }
      nlohmann::json& record = records[item->index];
      record = {{"input", batch_item.input}, {"output", batch_item.output}};
      if (item->error.empty()) {
        record["status"] = "ok";
      } else {
        record["status"] = "error";
        record["error"] = item->error;
        ++failed;
        std::fprintf(stderr, "%sbatch: %s: %s\n", isatty(STDERR_FILENO) ? "\n" : "", batch_item.input.c_str(),
                     item->error.c_str());
      }
      const double write_ms = milliseconds_since(start);
      record["ms"] = item->read_ms + item->compute_ms + write_ms;
      stage_ms[0] += item->read_ms;
      stage_ms[1] += item->compute_ms;
      stage_ms[2] += write_ms;
      progress.update(++done, ++processed, failed);
    }
  });
  {
    // However this block ends, both queues end, so that both threads finish and join.
    struct CloseQueues {
      BoundedQueue<InFlight<BatchCompute>>& read;
      BoundedQueue<InFlight<BatchWrite>>& write;
      ~CloseQueues() {
        read.close();
        write.close();
      }
    } close_queues{read_queue, write_queue};
    while (std::optional<InFlight<BatchCompute>> item = read_queue.pop()) {
      InFlight<BatchWrite> next;
      next.index = item->index;
      next.read_ms = item->read_ms;
      next.error = std::move(item->error);
      if (next.error.empty()) {
        const auto start = std::chrono::steady_clock::now();
        try {
          next.next = item->next();
        } catch (const std::exception& e) {
          next.error = e.what();
        }
        next.compute_ms = milliseconds_since(start);
      }
      write_queue.push(std::move(next));
    }
  }
  reader.join();
  writer.join();

  remove_stale_temporaries(items, todo);
  if (!todo.empty()) {
    // Read and write run beside compute: the batch keeps pace with compute alone while they are shorter.
    const double n = static_cast<double>(todo.size());
    std::fprintf(stderr, "batch: mean per image: read %.0f ms, compute %.0f ms, write %.0f ms\n", stage_ms[0] / n,
                 stage_ms[1] / n, stage_ms[2] / n);
  }
  std::string lines;
  for (const nlohmann::json& r : records) lines += r.dump() + "\n";
  manifest.write(lines.data(), lines.size());
  manifest.commit();
  std::printf("%zu images: %zu done, %zu skipped, %zu failed -> %s\n", items.size(), todo.size() - failed,
              items.size() - todo.size(), failed, manifest_path.c_str());
  return static_cast<int>(failed);
}

}  // namespace sam2rt::cli
