#include "core/weights.h"

#include "core/error.h"

namespace sam2rt {

void WeightMap::insert(const std::string& key, Tensor tensor) { tensors_[key] = std::move(tensor); }

const Tensor& WeightMap::at(const std::string& key) const {
  auto it = tensors_.find(key);
  if (it == tensors_.end()) throw Error("missing weight '" + key + "'");
  return it->second;
}

}  // namespace sam2rt
