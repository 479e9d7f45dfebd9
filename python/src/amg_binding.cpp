#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "api/automatic_mask_generator.h"
#include "bindings.h"
#include "compute_threads.h"
#include "core/error.h"
#include "io/mask_rle.h"
#include "loaded_model.h"
#include "numpy_tensor.h"

namespace py = pybind11;

namespace sam2rt::python {

namespace {

enum class OutputMode { binary_mask, uncompressed_rle, coco_rle };

OutputMode parse_output_mode(const std::string& name) {
  if (name == "binary_mask") return OutputMode::binary_mask;
  if (name == "uncompressed_rle") return OutputMode::uncompressed_rle;
  if (name == "coco_rle") return OutputMode::coco_rle;
  throw py::value_error("Unknown output_mode " + name + ": use binary_mask, uncompressed_rle or coco_rle");
}

// point_grids: one (N, 2) array of normalised (x, y) points per crop layer.
std::vector<std::vector<std::array<double, 2>>> grids_from_arrays(const std::optional<std::vector<py::array>>& grids) {
  std::vector<std::vector<std::array<double, 2>>> result;
  if (!grids) return result;
  for (size_t layer = 0; layer < grids->size(); ++layer) {
    const auto points = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure((*grids)[layer]);
    if (!points || points.ndim() != 2 || points.shape(1) != 2) {
      throw py::value_error("point_grids[" + std::to_string(layer) + "] must be an (N, 2) array of x, y in [0, 1]");
    }
    std::vector<std::array<double, 2>> layer_points;
    for (py::ssize_t i = 0; i < points.shape(0); ++i) layer_points.push_back({points.at(i, 0), points.at(i, 1)});
    result.push_back(std::move(layer_points));
  }
  return result;
}

py::list xywh(const std::array<int64_t, 4>& box) {
  py::list list;
  for (int64_t v : box) list.append(static_cast<double>(v));
  return list;
}

py::object segmentation(const UncompressedRle& rle, OutputMode mode) {
  if (mode == OutputMode::binary_mask) {
    const std::vector<uint8_t> pixels = decode_rle(rle);
    py::array_t<bool> mask({rle.height, rle.width});
    std::memcpy(mask.mutable_data(), pixels.data(), pixels.size());
    return mask;
  }
  py::dict record;
  record["size"] = py::list(py::make_tuple(rle.height, rle.width));
  if (mode == OutputMode::coco_rle) {
    record["counts"] = coco_rle_string(rle);
  } else {
    record["counts"] = py::cast(rle.counts);
  }
  return record;
}

// SAM2AutomaticMaskGenerator.generate's records, as the official dicts.
py::list records(const std::vector<AmgMask>& masks, OutputMode mode) {
  py::list list;
  for (const AmgMask& m : masks) {
    py::dict record;
    record["segmentation"] = segmentation(m.segmentation, mode);
    record["area"] = m.area;
    record["bbox"] = xywh(m.bbox);
    record["predicted_iou"] = static_cast<double>(m.predicted_iou);
    py::list point;
    point.append(static_cast<double>(m.point_coords[0]));
    point.append(static_cast<double>(m.point_coords[1]));
    py::list points;
    points.append(point);
    record["point_coords"] = points;
    record["stability_score"] = static_cast<double>(m.stability_score);
    record["crop_box"] = xywh(m.crop_box);
    list.append(record);
  }
  return list;
}

class AutomaticMaskGeneratorCore {
 public:
  AutomaticMaskGeneratorCore(const LoadedModel& model, AmgParams params, const std::string& output_mode)
      : mode_(parse_output_mode(output_mode)), generator_(model.model, checked(std::move(params))) {}

  py::list generate(const py::array& image) const {
    const RgbImage photo = image_from_numpy(image);
    std::vector<AmgMask> masks;
    {
      py::gil_scoped_release no_gil;
      apply_compute_threads();
      masks = generator_.generate(photo);
    }
    return records(masks, mode_);
  }

 private:
  static AmgParams checked(AmgParams params) {
    try {
      validate_amg_params(params);
    } catch (const Error& e) {
      throw py::value_error(e.what());
    }
    return params;
  }

  OutputMode mode_;
  AutomaticMaskGenerator generator_;
};

AutomaticMaskGeneratorCore make_generator(const LoadedModel& model, std::optional<int> points_per_side,
                                          int points_per_batch, double pred_iou_thresh, double stability_score_thresh,
                                          double stability_score_offset, double mask_threshold, double box_nms_thresh,
                                          int crop_n_layers, double crop_nms_thresh, double crop_overlap_ratio,
                                          int crop_n_points_downscale_factor,
                                          const std::optional<std::vector<py::array>>& point_grids,
                                          double min_mask_region_area, const std::string& output_mode, bool use_m2m,
                                          bool multimask_output) {
  AmgParams p;
  p.points_per_side = points_per_side;
  p.points_per_batch = points_per_batch;
  p.pred_iou_thresh = pred_iou_thresh;
  p.stability_score_thresh = stability_score_thresh;
  p.stability_score_offset = stability_score_offset;
  p.mask_threshold = mask_threshold;
  p.box_nms_thresh = box_nms_thresh;
  p.crop_n_layers = crop_n_layers;
  p.crop_nms_thresh = crop_nms_thresh;
  p.crop_overlap_ratio = crop_overlap_ratio;
  p.crop_n_points_downscale_factor = crop_n_points_downscale_factor;
  p.point_grids = grids_from_arrays(point_grids);
  p.min_mask_region_area = min_mask_region_area;
  p.use_m2m = use_m2m;
  p.multimask_output = multimask_output;
  return AutomaticMaskGeneratorCore(model, std::move(p), output_mode);
}

}  // namespace

void bind_automatic_mask_generator(py::module_& module) {
  py::class_<AutomaticMaskGeneratorCore>(module, "AutomaticMaskGeneratorCore")
      .def(py::init(&make_generator), py::arg("model"), py::arg("points_per_side"), py::arg("points_per_batch"),
           py::arg("pred_iou_thresh"), py::arg("stability_score_thresh"), py::arg("stability_score_offset"),
           py::arg("mask_threshold"), py::arg("box_nms_thresh"), py::arg("crop_n_layers"), py::arg("crop_nms_thresh"),
           py::arg("crop_overlap_ratio"), py::arg("crop_n_points_downscale_factor"), py::arg("point_grids"),
           py::arg("min_mask_region_area"), py::arg("output_mode"), py::arg("use_m2m"), py::arg("multimask_output"))
      .def("generate", &AutomaticMaskGeneratorCore::generate, py::arg("image"));
}

}  // namespace sam2rt::python
