#pragma once

#include <pybind11/pybind11.h>

namespace sam2rt::python {

// Each adds one group of classes/functions to the module sam2rt._sam2rt.
void bind_compute_threads(pybind11::module_& module);
void bind_model(pybind11::module_& module);
void bind_preprocessing(pybind11::module_& module);
void bind_predictor(pybind11::module_& module);
void bind_automatic_mask_generator(pybind11::module_& module);
void bind_batch(pybind11::module_& module);
void bind_coco_dataset(pybind11::module_& module);
void bind_video_predictor(pybind11::module_& module);

}  // namespace sam2rt::python
