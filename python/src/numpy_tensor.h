#pragma once

#include <pybind11/numpy.h>

#include "core/tensor.h"
#include "io/image.h"

namespace sam2rt::python {

// A float32 array over the tensor's own storage (no copy), with `shape` (same
// element count); the array keeps the storage alive. Call with the GIL held.
pybind11::array_t<float> to_numpy(Tensor tensor, const Shape& shape);
inline pybind11::array_t<float> to_numpy(Tensor tensor) {
  const Shape shape = tensor.shape();
  return to_numpy(std::move(tensor), shape);
}

// A copy of a float array of any layout as a row-major tensor; `what` names it in errors.
Tensor tensor_from_numpy(const pybind11::array& array, const char* what);

// An HxWx3 uint8 RGB array (any strides) as an image; ValueError naming what is wrong otherwise.
RgbImage image_from_numpy(const pybind11::array& array);

}  // namespace sam2rt::python
