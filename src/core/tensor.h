#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sam2rt {

using Shape = std::vector<int64_t>;

std::string shape_to_string(const Shape& shape);
int64_t shape_numel(const Shape& shape);

// A dense, row-major float32 tensor. Copies share the same storage (like a
// torch tensor handle); use clone() for an independent copy. Storage is either
// owned (64-byte aligned, zero-initialised) or a view into memory kept alive by
// an external owner, e.g. a memory-mapped file.
class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(Shape shape);
  // Owned storage whose contents are undefined, for outputs the caller writes in
  // full: skips the zero fill, a real cost for maps of megabytes made per call.
  static Tensor uninitialized(Shape shape);

  static Tensor view(Shape shape, float* data, std::shared_ptr<void> keep_alive);
  static Tensor filled(Shape shape, float value);

  const Shape& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t dim(int axis) const;  // negative axes count from the end
  int64_t numel() const { return numel_; }
  bool empty() const { return data_ == nullptr; }

  float* data() { return data_; }
  const float* data() const { return data_; }
  float* begin() { return data_; }
  float* end() { return data_ + numel_; }
  const float* begin() const { return data_; }
  const float* end() const { return data_ + numel_; }
  float& operator[](int64_t i) { return data_[i]; }
  float operator[](int64_t i) const { return data_[i]; }

  // Same storage, new shape with the same element count.
  Tensor reshaped(Shape shape) const;
  // Same storage: entries [first, first + count) of the first axis.
  Tensor rows(int64_t first, int64_t count) const;
  Tensor clone() const;

 private:
  Shape shape_;
  int64_t numel_ = 0;
  std::shared_ptr<void> storage_;
  float* data_ = nullptr;
};

}  // namespace sam2rt
