#include <pybind11/pybind11.h>

#include "bindings.h"
#include "core/error.h"

PYBIND11_MODULE(_sam2rt, module) {
  module.doc() = "sam2rt engine bindings; use the sam2rt package, not this module directly";
  // Engine errors are one line naming the problem: they reach Python as RuntimeError
  // unless a binding has already classified them as a bad argument (ValueError).
  pybind11::register_exception<sam2rt::Error>(module, "EngineError", PyExc_RuntimeError);
  sam2rt::python::bind_compute_threads(module);
  sam2rt::python::bind_model(module);
  sam2rt::python::bind_preprocessing(module);
  sam2rt::python::bind_predictor(module);
  sam2rt::python::bind_automatic_mask_generator(module);
  sam2rt::python::bind_batch(module);
  sam2rt::python::bind_coco_dataset(module);
  sam2rt::python::bind_video_predictor(module);
}
