#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <array>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/video_input.h"
#include "api/video_predictor.h"
#include "bindings.h"
#include "compute_threads.h"
#include "loaded_model.h"
#include "numpy_tensor.h"

namespace py = pybind11;

namespace sam2rt::python {

namespace {

// (frame_idx, obj_ids, video_res_masks [objects, 1, H, W]) as the official methods return it.
py::tuple frame_masks_tuple(VideoFrameMasks masks) {
  return py::make_tuple(masks.frame_idx, py::cast(masks.obj_ids), to_numpy(std::move(masks.video_res_masks)));
}

// The VideoPredictor of one init_state: the engine's predictor with the video's
// frames. Calls from several Python threads take turns (the predictor's state
// is one sequence of prompts and tracked frames); the GIL is released while
// the engine runs.
class VideoPredictorCore {
 public:
  VideoPredictorCore(const LoadedModel& model, const std::string& video_path, int fill_hole_area,
                     bool binarize_mask_from_pts_for_mem_enc, bool non_overlap_masks,
                     bool clear_non_cond_mem_around_input, bool add_all_frames_to_correct_as_cond) {
    VideoPredictorOptions options;
    TrackingConfig tracking = tracking_config(model.model->config());
    tracking.fill_hole_area = fill_hole_area;
    tracking.binarize_mask_from_pts_for_mem_enc = binarize_mask_from_pts_for_mem_enc;
    tracking.non_overlap_masks = non_overlap_masks;
    tracking.clear_non_cond_mem_around_input = clear_non_cond_mem_around_input;
    tracking.add_all_frames_to_correct_as_cond = add_all_frames_to_correct_as_cond;
    options.tracking = tracking;
    py::gil_scoped_release no_gil;
    apply_compute_threads();
    predictor_ = std::make_unique<VideoPredictor>(
        model.model, video_frames_from_path(video_path, model.model->config().image_size), options);
  }

  int64_t num_frames() const { return predictor_->num_frames(); }
  int video_width() const { return predictor_->video_width(); }
  int video_height() const { return predictor_->video_height(); }

  std::vector<int64_t> obj_ids() {
    std::lock_guard lock(mutex_);
    return predictor_->obj_ids();
  }

  py::tuple add_new_points_or_box(int64_t frame_idx, int64_t obj_id, const std::vector<std::array<float, 2>>& points,
                                  const std::vector<int>& labels, bool clear_old_points, bool normalize_coords,
                                  const std::optional<std::array<float, 4>>& box) {
    return frame_masks_tuple(run([&] {
      return predictor_->add_new_points_or_box(frame_idx, obj_id, points, labels, clear_old_points, normalize_coords,
                                               box);
    }));
  }

  py::tuple add_new_mask(int64_t frame_idx, int64_t obj_id, const py::array& mask) {
    const Tensor mask_tensor = tensor_from_numpy(mask, "mask");
    return frame_masks_tuple(run([&] { return predictor_->add_new_mask(frame_idx, obj_id, mask_tensor); }));
  }

  py::tuple clear_all_prompts_in_frame(int64_t frame_idx, int64_t obj_id) {
    return frame_masks_tuple(run([&] { return predictor_->clear_all_prompts_in_frame(frame_idx, obj_id); }));
  }

  void reset_state() {
    run([&] { predictor_->reset_state(); });
  }

  // (remaining obj_ids, [(frame_idx, video_res_masks)] of the frames whose masks changed).
  py::tuple remove_object(int64_t obj_id, bool strict, bool need_output) {
    auto [ids, frames] = run([&] { return predictor_->remove_object(obj_id, strict, need_output); });
    py::list updated;
    for (VideoFrameMasks& frame : frames) {
      updated.append(py::make_tuple(frame.frame_idx, to_numpy(std::move(frame.video_res_masks))));
    }
    return py::make_tuple(py::cast(ids), updated);
  }

  // propagate_in_video's preflight and frame order.
  VideoPredictor::Propagation start_propagation(std::optional<int64_t> start_frame_idx,
                                                std::optional<int64_t> max_frame_num_to_track, bool reverse) {
    return run([&] { return predictor_->propagate_in_video(start_frame_idx, max_frame_num_to_track, reverse); });
  }

  // Runs body on the predictor without the GIL, one call at a time.
  template <typename F>
  auto run(F&& body) -> decltype(body()) {
    py::gil_scoped_release no_gil;
    std::lock_guard lock(mutex_);
    apply_compute_threads();
    return body();
  }

 private:
  std::mutex mutex_;
  std::unique_ptr<VideoPredictor> predictor_;
};

// One propagate_in_video generator: tracks frame after frame of the predictor it
// keeps alive; several may exist, each with its own frame order.
class PropagationCore {
 public:
  PropagationCore(std::shared_ptr<VideoPredictorCore> predictor, std::optional<int64_t> start_frame_idx,
                  std::optional<int64_t> max_frame_num_to_track, bool reverse)
      : predictor_(std::move(predictor)),
        propagation_(predictor_->start_propagation(start_frame_idx, max_frame_num_to_track, reverse)) {}

  // The next tracked frame's (frame_idx, obj_ids, video_res_masks), None after the last.
  std::optional<py::tuple> next() {
    std::optional<VideoFrameMasks> masks = predictor_->run([&] { return propagation_.next(); });
    if (!masks) return std::nullopt;
    return frame_masks_tuple(std::move(*masks));
  }

 private:
  std::shared_ptr<VideoPredictorCore> predictor_;
  VideoPredictor::Propagation propagation_;
};

}  // namespace

void bind_video_predictor(py::module_& module) {
  py::class_<VideoPredictorCore, std::shared_ptr<VideoPredictorCore>>(module, "VideoPredictorCore")
      .def(py::init<const LoadedModel&, const std::string&, int, bool, bool, bool, bool>(), py::arg("model"),
           py::arg("video_path"), py::arg("fill_hole_area"), py::arg("binarize_mask_from_pts_for_mem_enc"),
           py::arg("non_overlap_masks"), py::arg("clear_non_cond_mem_around_input"),
           py::arg("add_all_frames_to_correct_as_cond"))
      .def_property_readonly("num_frames", &VideoPredictorCore::num_frames)
      .def_property_readonly("video_width", &VideoPredictorCore::video_width)
      .def_property_readonly("video_height", &VideoPredictorCore::video_height)
      .def_property_readonly("obj_ids", &VideoPredictorCore::obj_ids)
      .def("add_new_points_or_box", &VideoPredictorCore::add_new_points_or_box, py::arg("frame_idx"),
           py::arg("obj_id"), py::arg("points"), py::arg("labels"), py::arg("clear_old_points"),
           py::arg("normalize_coords"), py::arg("box"))
      .def("add_new_mask", &VideoPredictorCore::add_new_mask, py::arg("frame_idx"), py::arg("obj_id"), py::arg("mask"))
      .def("clear_all_prompts_in_frame", &VideoPredictorCore::clear_all_prompts_in_frame, py::arg("frame_idx"),
           py::arg("obj_id"))
      .def("reset_state", &VideoPredictorCore::reset_state)
      .def("remove_object", &VideoPredictorCore::remove_object, py::arg("obj_id"), py::arg("strict"),
           py::arg("need_output"))
;
  py::class_<PropagationCore>(module, "PropagationCore")
      .def(py::init<std::shared_ptr<VideoPredictorCore>, std::optional<int64_t>, std::optional<int64_t>, bool>(),
           py::arg("predictor"), py::arg("start_frame_idx"), py::arg("max_frame_num_to_track"), py::arg("reverse"))
      .def("next", &PropagationCore::next);
}

}  // namespace sam2rt::python
