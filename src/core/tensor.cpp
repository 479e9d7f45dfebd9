#include "core/tensor.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#include "core/error.h"

namespace sam2rt {

std::string shape_to_string(const Shape& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw Error("negative dimension in shape " + shape_to_string(shape));
    n *= d;
  }
  return n;
}

Tensor::Tensor(Shape shape) : Tensor(uninitialized(std::move(shape))) {
  std::memset(data_, 0, static_cast<size_t>(numel_) * sizeof(float));
}

Tensor Tensor::uninitialized(Shape shape) {
  constexpr size_t kAlignment = 64;
  Tensor t;
  t.shape_ = std::move(shape);
  t.numel_ = shape_numel(t.shape_);
  size_t bytes = static_cast<size_t>(std::max<int64_t>(t.numel_, 1)) * sizeof(float);
  bytes = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  // Plain pages, no transparent huge pages asked for: on these VMs free 2 MiB
  // blocks go back to the host (virtio free page reporting), so a fresh huge
  // page costs ~5 ms to fault in, 5x what its 512 small pages cost
  // (docs/PERFORMANCE.md, "Techniques, and why").
  void* memory = nullptr;
  if (posix_memalign(&memory, kAlignment, bytes) != 0) throw std::bad_alloc();
  t.storage_ = std::shared_ptr<void>(memory, std::free);
  t.data_ = static_cast<float*>(memory);
  return t;
}

Tensor Tensor::view(Shape shape, float* data, std::shared_ptr<void> keep_alive) {
  Tensor t;
  t.shape_ = std::move(shape);
  t.numel_ = shape_numel(t.shape_);
  t.storage_ = std::move(keep_alive);
  t.data_ = data;
  return t;
}

Tensor Tensor::filled(Shape shape, float value) {
  Tensor t(std::move(shape));
  std::fill(t.begin(), t.end(), value);
  return t;
}

int64_t Tensor::dim(int axis) const {
  int r = rank();
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r) {
    throw Error("axis " + std::to_string(axis) + " out of range for shape " + shape_to_string(shape_));
  }
  return shape_[static_cast<size_t>(axis)];
}

Tensor Tensor::rows(int64_t first, int64_t count) const {
  if (shape_.empty() || first < 0 || count < 0 || first + count > shape_[0]) {
    throw Error("rows [" + std::to_string(first) + ", " + std::to_string(first + count) + ") are outside " +
                shape_to_string(shape_));
  }
  Tensor t = *this;
  t.shape_[0] = count;
  const int64_t row_numel = shape_[0] == 0 ? 0 : numel_ / shape_[0];
  t.numel_ = count * row_numel;
  t.data_ = data_ + first * row_numel;
  return t;
}

Tensor Tensor::reshaped(Shape shape) const {
  if (shape_numel(shape) != numel_) {
    throw Error("cannot reshape " + shape_to_string(shape_) + " to " + shape_to_string(shape));
  }
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::clone() const {
  Tensor t = uninitialized(shape_);
  if (numel_) std::memcpy(t.data_, data_, static_cast<size_t>(numel_) * sizeof(float));
  return t;
}

}  // namespace sam2rt
