#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <limits>
#include <optional>
#include <string>

#include "bindings.h"
#include "compute_threads.h"
#include "loaded_model.h"
#include "api/model_source.h"
#include "backends/make_backend.h"

namespace py = pybind11;

namespace sam2rt::python {

namespace {

// build_sam2's architecture, weights and device ("cpu", "vulkan:N": where the
// image encoder runs). dynamic_multimask is the
// sam_mask_decoder_extra_args.dynamic_multimask_via_stability switch that
// apply_postprocessing turns on; without it a single-mask prediction always
// returns mask token 0, which a threshold below every stability score (they lie
// in [0, 1]) expresses exactly.
LoadedModel load_model(const std::string& variant, const std::string& config_path, const std::string& checkpoint,
                       std::optional<uint64_t> synthetic_salt, bool dynamic_multimask, double stability_delta,
                       double stability_thresh, const std::string& device) {
  ModelSource source;
  source.variant = variant;
  source.config_path = config_path;
  source.checkpoint_path = checkpoint;
  source.synthetic_salt = synthetic_salt;
  py::gil_scoped_release no_gil;
  apply_compute_threads();
  ModelConfig config = source.resolve_config();
  config.stability_delta = stability_delta;
  config.stability_thresh = dynamic_multimask ? stability_thresh : -std::numeric_limits<double>::infinity();
  const DeviceChoice choice = parse_device(device);
  std::shared_ptr<Backend> backend = make_backend(choice.kind, choice.gpu_index);
  WeightMap weights = Sam2Model::load_weights(source, config);
  return {std::make_shared<const Sam2Model>(std::move(config), std::move(weights), std::move(backend)),
          source.describe()};
}

}  // namespace

void bind_model(py::module_& module) {
  py::class_<LoadedModel>(module, "Model", "A loaded SAM 2.1 image model (immutable; share it between predictors).")
      .def_static("load", &load_model, py::arg("variant"), py::arg("config_path"), py::arg("checkpoint"),
                  py::arg("synthetic_salt"), py::arg("dynamic_multimask"), py::arg("stability_delta"),
                  py::arg("stability_thresh"), py::arg("device"))
      .def_property_readonly("image_size", [](const LoadedModel& m) { return m.model->config().image_size; })
      .def_property_readonly("name", [](const LoadedModel& m) { return m.model->config().name; })
      .def_property_readonly("embed_dim", [](const LoadedModel& m) { return m.model->config().embed_dim(); })
      .def_property_readonly("low_res_mask_size",
                             [](const LoadedModel& m) { return m.model->config().low_res_mask_size(); })
      .def_property_readonly("description", [](const LoadedModel& m) { return m.weights_description; });
}

}  // namespace sam2rt::python
