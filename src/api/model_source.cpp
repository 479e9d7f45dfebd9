#include "api/model_source.h"

#include <filesystem>

namespace sam2rt {

ModelConfig ModelSource::resolve_config() const {
  ModelConfig config = config_path.empty() ? preset_config(variant) : load_config_yaml(config_path);
  validate_config(config);
  return config;
}

std::string ModelSource::describe() const {
  const std::string arch = config_path.empty() ? variant : std::filesystem::path(config_path).filename().string();
  if (synthetic_salt) return arch + ", synthetic weights (salt " + std::to_string(*synthetic_salt) + ")";
  return arch + ", " + std::filesystem::path(checkpoint_path).filename().string();
}

}  // namespace sam2rt
