#include "object_file_names.h"

#include <filesystem>

namespace sam2rt::cli {

std::string object_file_name(const std::string& path, size_t index) {
  std::filesystem::path name(path);
  const std::string numbered = name.stem().string() + "_" + std::to_string(index) + name.extension().string();
  return name.replace_filename(numbered).string();
}

}  // namespace sam2rt::cli
