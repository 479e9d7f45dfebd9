#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <filesystem>
#include <memory>
#include <string>

#include "api/amg_json.h"
#include "api/automatic_mask_generator.h"
#include "api/feature_encoder.h"
#include "api/process_memory.h"
#include "bindings.h"
#include "compute_threads.h"
#include "core/error.h"
#include "io/atomic_file.h"
#include "io/image.h"
#include "kernels/matmul.h"
#include "model/synthetic_weights.h"

namespace py = pybind11;

namespace sam2rt::python {

namespace {

// The model of a batch job, loaded exactly as the CLI's --model / --synthetic-weights /
// --variant / --config / --precision flags load it, so that every file a worker
// writes has the bytes `sam2rt encode` or `sam2rt everything` would write.
struct BatchModel {
  std::shared_ptr<const Sam2Model> model;
  std::string description;           // as `sam2rt everything` names the weights in its reports
  std::string resolved_description;  // as `sam2rt encode` names them: the architecture resolved
  Precision precision = Precision::fp32;
  int64_t max_image_pixels = kDefaultMaxImagePixels;
};

BatchModel load_batch_model(const std::string& checkpoint, const std::string& synthetic_salt,
                            const std::string& variant, const std::string& config_path, const std::string& precision,
                            int64_t max_image_pixels) {
  if (max_image_pixels < 1) throw py::value_error("max_image_pixels must be >= 1");
  ModelSource source;
  source.checkpoint_path = checkpoint;
  source.variant = variant;
  source.config_path = config_path;
  BatchModel loaded;
  loaded.max_image_pixels = max_image_pixels;
  try {
    if (!synthetic_salt.empty()) source.synthetic_salt = parse_salt(synthetic_salt);
    loaded.precision = parse_precision(precision);
  } catch (const Error& e) {
    throw py::value_error(e.what());
  }
  if (source.checkpoint_path.empty() && !source.synthetic_salt) {
    throw py::value_error("no weights given: a checkpoint (--model) or synthetic weights (--synthetic-weights SALT)");
  }
  if (loaded.precision == Precision::bf16 && !bf16_matmul_supported()) {
    throw Error("precision bf16: oneDNN cannot run bfloat16 on this CPU (it needs AVX-512); use fp32");
  }
  py::gil_scoped_release no_gil;
  apply_compute_threads();
  loaded.model = Sam2Model::load(source);
  loaded.description = source.describe();
  loaded.resolved_description = source.describe(loaded.model->config());
  return loaded;
}

// The official generator parameters from a dict of official names (absent names
// keep the official defaults); ValueError naming an unknown or invalid one.
AmgParams amg_params_from_dict(const py::dict& values) {
  AmgParams params;
  for (const auto& [key, value] : values) {
    const std::string name = py::cast<std::string>(key);
    if (name == "points_per_side") {
      params.points_per_side = py::cast<std::optional<int>>(value);
    } else if (name == "point_grids") {
      params.point_grids = value.is_none() ? decltype(params.point_grids){}
                                           : py::cast<decltype(params.point_grids)>(value);
    } else if (name == "points_per_batch") {
      params.points_per_batch = py::cast<int>(value);
    } else if (name == "pred_iou_thresh") {
      params.pred_iou_thresh = py::cast<double>(value);
    } else if (name == "stability_score_thresh") {
      params.stability_score_thresh = py::cast<double>(value);
    } else if (name == "stability_score_offset") {
      params.stability_score_offset = py::cast<double>(value);
    } else if (name == "mask_threshold") {
      params.mask_threshold = py::cast<double>(value);
    } else if (name == "box_nms_thresh") {
      params.box_nms_thresh = py::cast<double>(value);
    } else if (name == "crop_n_layers") {
      params.crop_n_layers = py::cast<int>(value);
    } else if (name == "crop_nms_thresh") {
      params.crop_nms_thresh = py::cast<double>(value);
    } else if (name == "crop_overlap_ratio") {
      params.crop_overlap_ratio = py::cast<double>(value);
    } else if (name == "crop_n_points_downscale_factor") {
      params.crop_n_points_downscale_factor = py::cast<int>(value);
    } else if (name == "min_mask_region_area") {
      params.min_mask_region_area = py::cast<double>(value);
    } else if (name == "use_m2m") {
      params.use_m2m = py::cast<bool>(value);
    } else if (name == "multimask_output") {
      params.multimask_output = py::cast<bool>(value);
    } else {
      throw py::value_error("unknown automatic mask generator parameter '" + name + "'");
    }
  }
  try {
    validate_amg_params(params);
  } catch (const Error& e) {
    throw py::value_error(e.what());
  }
  return params;
}

AmgOutputMode batch_output_mode(const std::string& name) {
  AmgOutputMode mode;
  try {
    mode = parse_amg_output_mode(name);
  } catch (const Error& e) {
    throw py::value_error(e.what());
  }
  if (mode == AmgOutputMode::binary_mask) {
    throw py::value_error("output_mode binary_mask: batch mode keeps the masks in each image's JSON; use "
                          "coco_rle or uncompressed_rle");
  }
  return mode;
}

void create_parent_folder(const std::string& output) {
  const std::filesystem::path parent = std::filesystem::path(output).parent_path();
  if (parent.empty()) return;
  std::error_code error;
  std::filesystem::create_directories(parent, error);
  if (error) throw Error("'" + parent.string() + "': cannot create the folder (" + error.message() + ")");
}

StoredDtype stored_dtype(const std::string& name) {
  try {
    return parse_feature_dtype(name);
  } catch (const Error& e) {
    throw py::value_error(e.what());
  }
}

// `sam2rt encode` for one file of a batch, through the CLI's FeatureEncoder; the
// features file is written atomically (temporary file + rename).
class BatchEncoder {
 public:
  BatchEncoder(const BatchModel& model, const std::string& feature_dtype, bool all_features, bool position_encodings)
      : max_image_pixels_(model.max_image_pixels),
        encoder_(model.model, model.resolved_description,
                 FeatureFileOptions{.all_features = all_features,
                                    .position_encodings = position_encodings,
                                    .precision = model.precision,
                                    .dtype = stored_dtype(feature_dtype)}) {}

  void process(const std::string& input, const std::string& output) const {
    py::gil_scoped_release no_gil;
    apply_compute_threads();
    const EncodedImage encoded = encoder_.encode(encoder_.prepare(decode_image_file(input, max_image_pixels_)));
    create_parent_folder(output);
    encoder_.write(output, encoded);
  }

 private:
  int64_t max_image_pixels_;
  FeatureEncoder encoder_;
};

// `sam2rt everything` for one file of a batch: the per-image JSON of
// amg_report_json as report.dump() + "\n", written atomically.
class BatchSegmenter {
 public:
  BatchSegmenter(BatchModel model, const py::dict& params, const std::string& output_mode)
      : model_(std::move(model)),
        mode_(batch_output_mode(output_mode)),
        generator_(model_.model, amg_params_from_dict(params), EncodeOptions{.precision = model_.precision}) {}

  void process(const std::string& input, const std::string& output) const {
    py::gil_scoped_release no_gil;
    apply_compute_threads();
    const RgbImage image = decode_image_file(input, model_.max_image_pixels);
    const std::vector<AmgMask> masks = generator_.generate(image);
    const std::string name = std::filesystem::path(input).filename().string();
    const nlohmann::json report = amg_report_json(name, image.height, image.width, model_.description,
                                                  generator_.params(), mode_, masks);
    create_parent_folder(output);
    write_file_atomically(output, report.dump() + "\n");
  }

 private:
  BatchModel model_;
  AmgOutputMode mode_;
  AutomaticMaskGenerator generator_;
};

}  // namespace

void bind_batch(py::module_& module) {
  py::class_<BatchModel>(module, "BatchModel", "The model of a batch job, loaded as the CLI loads it.")
      .def_static("load", &load_batch_model, py::arg("checkpoint"), py::arg("synthetic_salt"), py::arg("variant"),
                  py::arg("config_path"), py::arg("precision"), py::arg("max_image_pixels"))
      .def_property_readonly("description", [](const BatchModel& m) { return m.description; });
  py::class_<BatchEncoder>(module, "BatchEncoder",
                           "Writes the file of `sam2rt encode` for one image of a batch.")
      .def(py::init<const BatchModel&, const std::string&, bool, bool>(), py::arg("model"),
           py::arg("feature_dtype") = "float32", py::arg("all_features") = false,
           py::arg("position_encodings") = false)
      .def("process", &BatchEncoder::process, py::arg("input"), py::arg("output"));
  py::class_<BatchSegmenter>(module, "BatchSegmenter",
                             "Writes the JSON of `sam2rt everything --input-dir` for one image of a batch.")
      .def(py::init<BatchModel, const py::dict&, const std::string&>(), py::arg("model"), py::arg("params"),
           py::arg("output_mode"))
      .def("process", &BatchSegmenter::process, py::arg("input"), py::arg("output"));
  module.def("keep_freed_memory_in_process", &keep_freed_memory_in_process,
             "Keeps memory the engine frees in this process instead of returning it to the kernel (glibc); "
             "for processes that run a batch job, such as Dask workers (they start with "
             "MALLOC_TRIM_THRESHOLD_=65536, so every image faulted its buffers in anew).");
  module.def(
      "validate_everything_options",
      [](const py::dict& params, const std::string& output_mode) {
        amg_params_from_dict(params);
        batch_output_mode(output_mode);
      },
      py::arg("params"), py::arg("output_mode"),
      "ValueError naming the first bad generator parameter (official names) or output mode of a batch.");
}

}  // namespace sam2rt::python
