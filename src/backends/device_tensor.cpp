#include "backends/device_tensor.h"

#include "core/error.h"

namespace sam2rt {

DeviceTensor DeviceTensor::reshaped(Shape shape) const {
  if (shape_numel(shape) != numel()) {
    throw Error("cannot reshape " + shape_to_string(shape_) + " to " + shape_to_string(shape));
  }
  DeviceTensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

}  // namespace sam2rt
