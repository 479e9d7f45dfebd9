#include "staged_outputs.h"

#include <filesystem>

#include "core/error.h"

namespace sam2rt::cli {

namespace {

std::unique_ptr<AtomicFile> stage(const std::string& path, const std::string& flag) {
  std::error_code ignored;
  if (std::filesystem::is_directory(path, ignored)) {
    throw Error(flag + " '" + path + "' is a directory; give a file name");
  }
  try {
    return std::make_unique<AtomicFile>(path);
  } catch (const Error& e) {
    throw Error(flag + ": " + e.what());
  }
}

}  // namespace

AtomicFile* StagedOutputs::add(const std::string& path, const std::string& flag) {
  if (path.empty()) return nullptr;
  files_.push_back(stage(path, flag));
  return files_.back().get();
}

void StagedOutputs::commit_all() {
  for (auto& file : files_) file->commit();
}

void require_writable(const std::string& path, const std::string& flag) { stage(path, flag); }

}  // namespace sam2rt::cli
