#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "api/feature_file.h"
#include "api/predictor.h"
#include "bindings.h"
#include "compute_threads.h"
#include "core/error.h"
#include "kernels/matmul.h"
#include "loaded_model.h"
#include "numpy_tensor.h"
#include "preprocessing.h"
#include "prompt_arrays.h"

namespace py = pybind11;

namespace sam2rt::python {

namespace {

// What set_image leaves behind for one photo: the engine's predictor on its
// features, and the encoder outputs that save_features writes.
struct ImageState {
  Predictor predictor;
  EncoderOutputs outputs;
  int width = 0;
  int height = 0;
};

// The state of SAM2ImagePredictor behind the Python class: the images set by
// set_image (one) or set_image_batch (several). The list is replaced as a whole,
// so predictions on other threads keep the snapshot they started with; the GIL
// is released for every encode and decode.
class ImagePredictorCore {
 public:
  ImagePredictorCore(const LoadedModel& model, float mask_threshold, double max_hole_area, double max_sprinkle_area,
                     const std::string& preprocessing, const std::string& precision)
      : model_(model), preprocessing_(parse_preprocessing(preprocessing)) {
    fill_.threshold = mask_threshold;
    fill_.max_hole_area = max_hole_area;
    fill_.max_sprinkle_area = max_sprinkle_area;
    try {
      precision_ = parse_precision(precision);
    } catch (const Error& e) {
      throw py::value_error(std::string("precision: ") + e.what());
    }
    if (precision_ == Precision::bf16 && !bf16_matmul_supported()) {
      throw py::value_error("precision 'bf16': oneDNN cannot run bfloat16 on this CPU (it needs AVX-512); use 'fp32'");
    }
  }

  void set_images(const std::vector<py::array>& arrays) {
    std::vector<RgbImage> photos;
    for (const py::array& array : arrays) photos.push_back(image_from_numpy(array));
    py::gil_scoped_release no_gil;
    apply_compute_threads();
    auto states = std::make_shared<std::vector<ImageState>>();
    EncodeOptions options;
    options.precision = precision_;
    for (const RgbImage& photo : photos) {
      const Tensor input = preprocess(photo, model_.model->config().image_size, preprocessing_);
      ImageState state{Predictor(model_.model, fill_), model_.model->encoder().encode(input, options), photo.width,
                       photo.height};
      state.predictor.set_features(state.outputs.decoder, photo.width, photo.height);
      states->push_back(std::move(state));
    }
    replace(std::move(states));
  }

  void set_features_file(const std::string& path, bool force) {
    py::gil_scoped_release no_gil;
    FeatureFile file = read_feature_file(path);
    auto states = std::make_shared<std::vector<ImageState>>();
    ImageState state{Predictor(model_.model, fill_), EncoderOutputs{}, file.orig_width, file.orig_height};
    state.outputs.decoder = file.features;
    // Refused (naming both sides) when another model made them.
    state.predictor.set_features(std::move(file), force);
    states->push_back(std::move(state));
    replace(std::move(states));
  }

  void save_features_file(const std::string& path) const {
    const auto states = snapshot();
    if (states->size() != 1) {
      throw py::value_error("save_features needs exactly one image set with set_image (" +
                            std::to_string(states->size()) + " are set)");
    }
    py::gil_scoped_release no_gil;
    const ImageState& state = states->front();
    FeatureFileOptions options;
    options.precision = precision_;
    write_feature_file(path, state.outputs, identify_model(model_.model->config(), model_.model->weights()),
                       model_.weights_description, state.width, state.height, options);
  }

  void reset() { replace(std::make_shared<std::vector<ImageState>>()); }

  int image_count() const { return static_cast<int>(snapshot()->size()); }

  std::vector<std::pair<int, int>> orig_hw() const {
    std::vector<std::pair<int, int>> sizes;
    for (const ImageState& state : *snapshot()) sizes.emplace_back(state.height, state.width);
    return sizes;
  }

  // Masks [B, M, H, W] (logits, or 1/0 above/below mask_threshold), IoU [B, M]
  // and low-res logits [B, M, L, L] for the B prompts of the arrays (see prompt_arrays.h).
  py::tuple predict(int image_index, const std::optional<py::array>& points, const std::optional<py::array>& labels,
                    const std::optional<py::array>& boxes, const std::optional<py::array>& masks, bool multimask,
                    bool return_logits) const {
    const auto states = snapshot();
    if (states->empty()) {
      throw std::runtime_error("An image must be set with .set_image(...) before mask prediction.");
    }
    if (image_index < 0 || image_index >= static_cast<int>(states->size())) {
      throw py::value_error("image index " + std::to_string(image_index) + " is out of range: " +
                            std::to_string(states->size()) + " image(s) are set");
    }
    const ImageState& state = (*states)[static_cast<size_t>(image_index)];
    const std::vector<Prompt> prompts =
        prompts_from_arrays(points, labels, boxes, masks, model_.model->config().low_res_mask_size());
    for (size_t b = 0; b < prompts.size(); ++b) {
      try {
        validate_prompt(prompts[b], state.width, state.height, model_.model->config());
      } catch (const Error& e) {
        throw py::value_error(prompts.size() > 1 ? "prompt " + std::to_string(b) + ": " + e.what() : e.what());
      }
    }
    Tensor mask_out, iou_out, low_res_out;
    {
      py::gil_scoped_release no_gil;
      apply_compute_threads();
      run_prediction(state, prompts, multimask, return_logits, mask_out, iou_out, low_res_out);
    }
    return py::make_tuple(to_numpy(std::move(mask_out)), to_numpy(std::move(iou_out)),
                          to_numpy(std::move(low_res_out)));
  }

  // Wall milliseconds of the C++ side of predict(points [B, N, 2], labels [B, N],
  // multimask) on the first image, without argument conversion or the numpy
  // wrapping: what bench/python_speed.py subtracts to get the binding's overhead.
  std::vector<double> time_predict(const py::array& points, const py::array& labels, int runs, int warmup) const {
    const auto states = snapshot();
    if (states->empty()) throw std::runtime_error("An image must be set with .set_image(...) before timing predict.");
    const ImageState& state = states->front();
    const std::vector<Prompt> prompts =
        prompts_from_arrays(points, labels, std::nullopt, std::nullopt, model_.model->config().low_res_mask_size());
    std::vector<double> samples;
    py::gil_scoped_release no_gil;
    apply_compute_threads();
    for (int i = 0; i < warmup + runs; ++i) {
      const auto start = std::chrono::steady_clock::now();
      Tensor masks, iou, low_res;
      run_prediction(state, prompts, true, false, masks, iou, low_res);
      const std::chrono::duration<double, std::milli> elapsed = std::chrono::steady_clock::now() - start;
      if (i >= warmup) samples.push_back(elapsed.count());
    }
    return samples;
  }

  // image_embed, feat_s0, feat_s1 of every image, each [B, C, h, w]; read-only
  // views of the predictor's own features when one image is set.
  py::dict features() const {
    const auto states = snapshot();
    if (states->empty()) throw std::runtime_error("An image must be set with .set_image(...) to generate an embedding.");
    auto gather = [&](Tensor DecoderFeatures::*member) {
      std::vector<Tensor> parts;
      for (const ImageState& state : *states) parts.push_back(state.predictor.features().*member);
      py::array_t<float> array = to_numpy(concatenate(parts));
      array.attr("setflags")(py::arg("write") = false);
      return array;
    };
    py::dict result;
    result["image_embed"] = gather(&DecoderFeatures::image_embed);
    result["high_res_feats"] = py::make_tuple(gather(&DecoderFeatures::feat_s0), gather(&DecoderFeatures::feat_s1));
    return result;
  }

 private:
  std::shared_ptr<const std::vector<ImageState>> snapshot() const {
    std::lock_guard lock(mutex_);
    return images_;
  }

  void replace(std::shared_ptr<const std::vector<ImageState>> images) {
    std::lock_guard lock(mutex_);
    images_ = std::move(images);
  }

  // Batch-1 tensors are reused as they are (no copy); several are stacked.
  static Tensor concatenate(const std::vector<Tensor>& parts) {
    if (parts.size() == 1) return parts.front();
    Shape shape = parts.front().shape();
    shape[0] = static_cast<int64_t>(parts.size());
    Tensor out = Tensor::uninitialized(shape);
    float* dst = out.data();
    for (const Tensor& part : parts) dst = std::copy(part.begin(), part.end(), dst);
    return out;
  }

  void run_prediction(const ImageState& state, const std::vector<Prompt>& prompts, bool multimask,
                      bool return_logits, Tensor& masks, Tensor& iou, Tensor& low_res) const {
    std::vector<MaskPrediction> predictions;
    if (prompts.size() == 1) {
      predictions.push_back(state.predictor.predict(prompts.front(), multimask));
    } else {
      predictions = state.predictor.predict_batch(prompts, multimask);
    }
    stack_predictions(predictions, return_logits, masks, iou, low_res);
  }

  void stack_predictions(std::vector<MaskPrediction>& predictions, bool return_logits, Tensor& masks, Tensor& iou,
                         Tensor& low_res) const {
    const int64_t batch = static_cast<int64_t>(predictions.size());
    const MaskPrediction& first = predictions.front();
    const int64_t count = first.masks.dim(0);
    std::vector<Tensor> mask_parts, low_res_parts;
    iou = Tensor::uninitialized({batch, count});
    for (int64_t b = 0; b < batch; ++b) {
      MaskPrediction& p = predictions[static_cast<size_t>(b)];
      if (!return_logits) {
        for (float& v : p.masks) v = v > fill_.threshold ? 1.0f : 0.0f;
      }
      Shape one = p.masks.shape();
      one.insert(one.begin(), 1);
      mask_parts.push_back(p.masks.reshaped(one));
      Shape one_low = p.low_res_masks.shape();
      one_low.insert(one_low.begin(), 1);
      low_res_parts.push_back(p.low_res_masks.reshaped(one_low));
      std::copy(p.iou_predictions.begin(), p.iou_predictions.end(), iou.data() + b * count);
    }
    masks = concatenate(mask_parts);
    low_res = concatenate(low_res_parts);
  }

  LoadedModel model_;
  MaskFill fill_;
  Preprocessing preprocessing_;
  Precision precision_ = Precision::fp32;
  mutable std::mutex mutex_;
  std::shared_ptr<const std::vector<ImageState>> images_ = std::make_shared<std::vector<ImageState>>();
};

}  // namespace

void bind_predictor(py::module_& module) {
  py::class_<ImagePredictorCore>(module, "ImagePredictorCore")
      .def(py::init<const LoadedModel&, float, double, double, const std::string&, const std::string&>(),
           py::arg("model"), py::arg("mask_threshold"), py::arg("max_hole_area"), py::arg("max_sprinkle_area"),
           py::arg("preprocess"), py::arg("precision"))
      .def("set_images", &ImagePredictorCore::set_images, py::arg("images"))
      .def("set_features_file", &ImagePredictorCore::set_features_file, py::arg("path"), py::arg("force"))
      .def("save_features_file", &ImagePredictorCore::save_features_file, py::arg("path"))
      .def("reset", &ImagePredictorCore::reset)
      .def("image_count", &ImagePredictorCore::image_count)
      .def("orig_hw", &ImagePredictorCore::orig_hw)
      .def("predict", &ImagePredictorCore::predict, py::arg("image_index"), py::arg("points"), py::arg("labels"),
           py::arg("boxes"), py::arg("masks"), py::arg("multimask"), py::arg("return_logits"))
      .def("features", &ImagePredictorCore::features)
      .def("time_predict", &ImagePredictorCore::time_predict, py::arg("points"), py::arg("labels"), py::arg("runs"),
           py::arg("warmup"));
}

}  // namespace sam2rt::python
