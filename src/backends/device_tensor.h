#pragma once

#include <cstdint>
#include <memory>

#include "core/tensor.h"

namespace sam2rt {

enum class ElementType { f32, bf16 };

// An activation or constant of a Backend: shape, element type and storage the
// backend that made it owns (CPU: pool memory; Vulkan: a range of one of its
// large buffers). Copies share the storage, like Tensor handles; the storage is
// returned to its backend when the last handle dies.
class DeviceTensor {
 public:
  DeviceTensor() = default;
  DeviceTensor(Shape shape, ElementType type, std::shared_ptr<void> storage)
      : shape_(std::move(shape)), type_(type), storage_(std::move(storage)) {}

  const Shape& shape() const { return shape_; }
  // dim(-1) is the last dimension.
  int64_t dim(int64_t i) const { return shape_.at(static_cast<size_t>(i < 0 ? i + rank() : i)); }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape_) n *= d;
    return n;
  }
  ElementType type() const { return type_; }
  bool empty() const { return storage_ == nullptr; }
  const std::shared_ptr<void>& storage() const { return storage_; }
  bool shares_storage_with(const DeviceTensor& other) const { return storage_ != nullptr && storage_ == other.storage_; }

  // The same elements under another shape of the same size.
  DeviceTensor reshaped(Shape shape) const;

 private:
  Shape shape_;
  ElementType type_ = ElementType::f32;
  std::shared_ptr<void> storage_;
};

}  // namespace sam2rt
