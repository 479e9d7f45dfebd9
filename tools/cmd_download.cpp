#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "checkpoint_catalog.h"
#include "checkpoint_verification.h"
#include "commands.h"
#include "core/error.h"
#include "download_progress.h"
#include "http_download.h"

namespace sam2rt::cli {

namespace {

namespace fs = std::filesystem;

constexpr double kMegabyte = 1e6;

// The last path segment of a URL, without query or fragment: the file name a
// mirror's URL gives when no variant names the file.
std::string file_name_of(const std::string& url) {
  const size_t scheme_end = url.find("://");
  std::string path = url.substr(scheme_end == std::string::npos ? 0 : scheme_end + 3);
  path = path.substr(0, path.find_first_of("?#"));
  const size_t slash = path.rfind('/');
  const std::string name = slash == std::string::npos ? std::string() : path.substr(slash + 1);
  if (name.empty() || name == "." || name == ".." || name.find('\\') != std::string::npos) {
    throw Error("cannot take a file name from the URL '" + url + "'; name a variant (tiny, small, base_plus, large)");
  }
  return name;
}

// Makes a rename in `dir` survive a crash.
void sync_directory(const fs::path& dir) {
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

std::string verified_text(const CheckpointVerification& verification) {
  std::string text = std::to_string(verification.tensors) + " tensors";
  if (verification.zip_records > 0) text = std::to_string(verification.zip_records) + " zip records and " + text;
  return text + " verified";
}

struct DownloadCommand {
  std::string variant;
  std::string dir = "models";
  std::string url;
  std::string config_path;
  std::string ca_file;
  bool verify_existing = false;
  long connect_timeout_s = 15;
  long stall_timeout_s = 30;

  // The architecture the file is checked against: --config, else the variant's preset.
  ModelSource architecture() const {
    ModelSource source;
    if (!variant.empty()) source.variant = variant;
    source.config_path = config_path;
    return source;
  }

  void run() const {
    if (variant.empty() && (url.empty() || config_path.empty())) {
      throw Error("name a variant (tiny, small, base_plus, large), or give both --url and --config");
    }
    HttpDownloadOptions options;
    options.url = url.empty() ? std::string(official_checkpoint(variant).url) : url;
    options.ca_file = ca_file;
    options.connect_timeout_s = connect_timeout_s;
    options.stall_timeout_s = stall_timeout_s;
    check_http_url(options.url);
    const std::string file_name =
        variant.empty() ? file_name_of(options.url) : std::string(official_checkpoint(variant).file_name);
    const fs::path target = fs::path(dir) / file_name;
    const std::string part = target.string() + ".part";

    if (fs::exists(target)) {
      if (!verify_existing) {
        std::printf("%s is already there (add --verify to check it again)\n", target.c_str());
        return;
      }
      CheckpointVerification verification;
      try {
        verification = verify_checkpoint(target.string(), architecture());
      } catch (const Error& e) {
        throw Error(target.string() + " fails verification (delete it and download it again): " + e.what());
      }
      std::printf("%s is already there: %s\n", target.c_str(), verified_text(verification).c_str());
      return;
    }

    std::error_code error;
    fs::create_directories(dir, error);
    if (error) throw Error("cannot create the folder '" + dir + "': " + error.message());
    if (fs::exists(part)) {
      std::fprintf(stderr, "resuming %s from byte %llu\n", options.url.c_str(),
                   static_cast<unsigned long long>(fs::file_size(part)));
    } else {
      std::fprintf(stderr, "downloading %s\n", options.url.c_str());
    }
    DownloadOutcome outcome;
    {
      DownloadProgress progress(file_name);
      outcome = download_resumable(options, part, [&](uint64_t have, uint64_t total) { progress.update(have, total); });
      progress.finish();
    }
    if (outcome.started_over) std::fprintf(stderr, "the server cannot resume, so the download started over\n");

    CheckpointVerification verification;
    try {
      verification = verify_checkpoint(part, architecture());
    } catch (const Error& e) {
      fs::remove(part, error);
      throw Error("the downloaded file failed verification and was removed: " + std::string(e.what()));
    }
    fs::rename(part, target, error);
    if (error) throw Error("cannot rename '" + part + "' to '" + target.string() + "': " + error.message());
    sync_directory(target.parent_path());
    std::printf("saved %s (%.1f MB; %s)\n", target.c_str(), static_cast<double>(outcome.bytes) / kMegabyte,
                verified_text(verification).c_str());
  }
};

}  // namespace

void register_download(CLI::App& app) {
  auto command = std::make_shared<DownloadCommand>();
  CLI::App* sub = app.add_subcommand(
      "download",
      "Download an official SAM 2.1 checkpoint into models/.\n"
      "Download an official SAM 2.1 checkpoint over HTTPS into --dir (default models/): resumable (rerun after an "
      "interruption), written atomically, and kept only after it loads: every zip record's CRC-32 and the weight "
      "manifest (keys, shapes, no NaN/Inf) are checked; a file that fails is removed.");
  std::vector<std::string> variants;
  for (const OfficialCheckpoint& checkpoint : official_checkpoints()) variants.emplace_back(checkpoint.variant);
  sub->add_option("variant", command->variant, "tiny, small, base_plus or large")->check(CLI::IsMember(variants));
  sub->add_option("--dir", command->dir, "folder to save into")->default_val("models");
  sub->add_option("--url", command->url,
                  "download from this http(s) URL (a mirror) instead of Meta's; without a variant the file is "
                  "named after the URL's last segment");
  sub->add_option("--config", command->config_path,
                  "verify against this official-format SAM 2.1 YAML config instead of the variant's")
      ->check(CLI::ExistingFile);
  sub->add_option("--ca-file", command->ca_file, "PEM certificates to trust instead of the system's")
      ->check(CLI::ExistingFile);
  sub->add_flag("--verify", command->verify_existing, "when the file is already there, check it again");
  sub->add_option("--connect-timeout", command->connect_timeout_s, "seconds to wait for a connection")
      ->default_val(15)
      ->check(CLI::Range(1, 600));
  sub->add_option("--stall-timeout", command->stall_timeout_s,
                  "give up after this many seconds below 1 KiB/s (rerun to resume)")
      ->default_val(30)
      ->check(CLI::Range(1, 3600));
  sub->callback([command] { command->run(); });
}

}  // namespace sam2rt::cli
