#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "bindings.h"
#include "compute_threads.h"
#include "model/preprocess.h"
#include "model/torchvision_preprocess.h"
#include "numpy_tensor.h"
#include "preprocessing.h"

namespace py = pybind11;

namespace sam2rt::python {

Preprocessing parse_preprocessing(const std::string& name) {
  if (name == "pillow") return Preprocessing::pillow;
  if (name == "torchvision") return Preprocessing::torchvision;
  throw py::value_error("preprocess must be 'pillow' (the model card's, the default) or 'torchvision' (the official "
                        "predictor's), got '" + name + "'");
}

Tensor preprocess(const RgbImage& image, int image_size, Preprocessing method) {
  return method == Preprocessing::torchvision ? preprocess_image_torchvision(image, image_size)
                                              : preprocess_image(image, image_size);
}

void bind_preprocessing(py::module_& module) {
  module.def(
      "preprocess",
      [](const py::array& image, int image_size, const std::string& method) {
        const RgbImage rgb = image_from_numpy(image);
        const Preprocessing chosen = parse_preprocessing(method);
        if (image_size <= 0 || image_size > 8192) throw py::value_error("image_size must be in 1..8192");
        Tensor input;
        {
          py::gil_scoped_release no_gil;
          apply_compute_threads();
          input = preprocess(rgb, image_size, chosen);
        }
        return to_numpy(std::move(input));
      },
      py::arg("image"), py::arg("image_size"), py::arg("method") = "pillow",
      "The encoder input [1, 3, S, S] float32 for an HxWx3 uint8 image.");
}

}  // namespace sam2rt::python
