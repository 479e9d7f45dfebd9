#include "mask_folder.h"

#include <unistd.h>

#include <algorithm>

#include "core/error.h"
#include "io/atomic_file.h"

namespace sam2rt::cli {

namespace fs = std::filesystem;

MaskFolder::MaskFolder(const std::string& folder, bool staged) : folder_(folder) {
  std::error_code error;
  if (fs::exists(folder_, error) && !fs::is_directory(folder_, error)) {
    throw Error("--out-dir '" + folder + "' is a file; give a folder");
  }
  // Remember which of the missing folders this run creates, to remove them on failure.
  for (fs::path missing = folder_; !missing.empty() && !fs::exists(missing, error); missing = missing.parent_path()) {
    created_.insert(created_.begin(), missing);
    if (missing == missing.parent_path()) break;
  }
  fs::create_directories(folder_, error);
  if (error) throw Error("--out-dir '" + folder + "': cannot create it: " + error.message());
  if (staged) {
    staging_ = folder_ / (".sam2rt-track-" + std::to_string(::getpid()));
    fs::remove_all(staging_, error);
    if (!fs::create_directory(staging_, error)) {
      throw Error("--out-dir '" + folder + "': cannot write into it: " + error.message());
    }
  }
}

MaskFolder::~MaskFolder() {
  if (committed_) return;
  std::error_code ignored;
  if (!staging_.empty()) {
    fs::remove_all(staging_, ignored);
  } else {
    for (const std::string& name : names_) fs::remove(folder_ / name, ignored);
  }
  // Innermost first; fs::remove leaves a folder that is not empty.
  for (auto it = created_.rbegin(); it != created_.rend(); ++it) fs::remove(*it, ignored);
}

void MaskFolder::write(const std::string& name, const std::vector<uint8_t>& bytes) {
  const fs::path target = (staging_.empty() ? folder_ : staging_) / name;
  std::error_code error;
  const bool existed = fs::exists(target, error);
  AtomicFile file(target.string());
  file.write(bytes.data(), bytes.size());
  file.commit();
  if (!existed && std::find(names_.begin(), names_.end(), name) == names_.end()) names_.push_back(name);
}

std::string MaskFolder::path_of(const std::string& name) const {
  return ((staging_.empty() ? folder_ : staging_) / name).string();
}

void MaskFolder::commit() {
  if (!staging_.empty()) {
    for (const std::string& name : names_) {
      std::error_code error;
      fs::rename(staging_ / name, folder_ / name, error);
      if (error) throw Error("--out-dir '" + folder_.string() + "': cannot move " + name + " into it: " + error.message());
    }
    std::error_code ignored;
    fs::remove_all(staging_, ignored);
  }
  committed_ = true;
}

}  // namespace sam2rt::cli
