#pragma once

#include <map>
#include <string>

#include "core/tensor.h"

namespace sam2rt {

// A state dict: official checkpoint key -> float32 tensor in the official shape.
class WeightMap {
 public:
  void insert(const std::string& key, Tensor tensor);
  bool contains(const std::string& key) const { return tensors_.count(key) != 0; }
  // Throws Error naming the key when it is absent.
  const Tensor& at(const std::string& key) const;
  const std::map<std::string, Tensor>& all() const { return tensors_; }
  size_t size() const { return tensors_.size(); }

 private:
  std::map<std::string, Tensor> tensors_;
};

}  // namespace sam2rt
