#include "numpy_tensor.h"

#include <cstring>
#include <string>

namespace py = pybind11;

namespace sam2rt::python {

namespace {

std::string shape_text(const py::array& array) {
  std::string text = "(";
  for (py::ssize_t i = 0; i < array.ndim(); ++i) text += (i ? ", " : "") + std::to_string(array.shape(i));
  return text + (array.ndim() == 1 ? ",)" : ")");
}

}  // namespace

py::array_t<float> to_numpy(Tensor tensor, const Shape& shape) {
  auto* owner = new Tensor(tensor.reshaped(shape));
  py::capsule keep_alive(owner, [](void* p) { delete static_cast<Tensor*>(p); });
  return py::array_t<float>(std::vector<py::ssize_t>(shape.begin(), shape.end()), owner->data(), keep_alive);
}

Tensor tensor_from_numpy(const py::array& array, const char* what) {
  if (array.dtype().kind() != 'f' && array.dtype().kind() != 'i' && array.dtype().kind() != 'u') {
    throw py::value_error(std::string(what) + " must be a numeric (float or integer) array, got dtype " + py::str(array.dtype()).cast<std::string>());
  }
  const auto contiguous = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(array);
  if (!contiguous) throw py::error_already_set();
  Tensor tensor(Shape(contiguous.shape(), contiguous.shape() + contiguous.ndim()));
  if (tensor.numel() > 0) std::memcpy(tensor.data(), contiguous.data(), sizeof(float) * static_cast<size_t>(tensor.numel()));
  return tensor;
}

RgbImage image_from_numpy(const py::array& array) {
  if (!py::isinstance<py::array_t<uint8_t>>(array)) {
    throw py::value_error("image must be a uint8 array with values 0..255, got dtype " +
                          py::str(array.dtype()).cast<std::string>());
  }
  if (array.ndim() != 3 || array.shape(2) != 3) {
    throw py::value_error("image must be an HxWx3 RGB array (HWC), got shape " + shape_text(array));
  }
  if (array.shape(0) <= 0 || array.shape(1) <= 0) {
    throw py::value_error("image is empty: shape " + shape_text(array));
  }
  if (array.shape(0) > (1 << 20) || array.shape(1) > (1 << 20)) {
    throw py::value_error("image side longer than 1048576 pixels: shape " + shape_text(array));
  }
  const auto contiguous = py::array_t<uint8_t, py::array::c_style>::ensure(array);
  if (!contiguous) throw py::error_already_set();
  RgbImage image;
  image.height = static_cast<int>(array.shape(0));
  image.width = static_cast<int>(array.shape(1));
  image.pixels.assign(contiguous.data(), contiguous.data() + contiguous.size());
  return image;
}

}  // namespace sam2rt::python
