#include "prompt_arrays.h"

#include <cmath>
#include <string>

#include "numpy_tensor.h"

namespace py = pybind11;

namespace sam2rt::python {

namespace {

std::string shape_text(const Tensor& t) { return shape_to_string(t.shape()); }

void require(bool ok, const std::string& message) {
  if (!ok) throw py::value_error(message);
}

}  // namespace

std::vector<Prompt> prompts_from_arrays(const std::optional<py::array>& points, const std::optional<py::array>& labels,
                                        const std::optional<py::array>& boxes, const std::optional<py::array>& masks,
                                        int64_t low_res_size) {
  require(points.has_value() == labels.has_value(), "point_labels must be supplied if point_coords is supplied");
  std::optional<Tensor> point_xy, point_label, box, mask;
  if (points) {
    point_xy = tensor_from_numpy(*points, "point_coords");
    point_label = tensor_from_numpy(*labels, "point_labels");
    require(point_xy->rank() == 3 && point_xy->dim(2) == 2,
            "point_coords must have shape (N, 2) or (B, N, 2), got " + shape_text(*point_xy));
    require(point_label->rank() == 2 && point_label->dim(0) == point_xy->dim(0) &&
                point_label->dim(1) == point_xy->dim(1),
            "point_labels must have one label per point: shape " + shape_text(*point_label) + " for point_coords " +
                shape_text(*point_xy));
  }
  if (boxes) {
    box = tensor_from_numpy(*boxes, "box");
    require(box->rank() == 2 && box->dim(1) == 4, "box must have shape (4,) or (B, 4), got " + shape_text(*box));
  }
  if (masks) {
    mask = tensor_from_numpy(*masks, "mask_input");
    require(mask->rank() == 4 && mask->dim(1) == 1 && mask->dim(2) == low_res_size && mask->dim(3) == low_res_size,
            "mask_input must have shape (1, " + std::to_string(low_res_size) + ", " + std::to_string(low_res_size) +
                ") or (B, 1, " + std::to_string(low_res_size) + ", " + std::to_string(low_res_size) + "), got " +
                shape_text(*mask));
  }
  const int64_t batch = point_xy ? point_xy->dim(0) : box ? box->dim(0) : mask ? mask->dim(0) : 0;
  require(batch > 0, "no prompt: give point_coords/point_labels, a box or a mask_input");
  require(!box || box->dim(0) == batch, "box holds " + std::to_string(box ? box->dim(0) : 0) +
                                            " boxes but point_coords holds " + std::to_string(batch) + " prompts");
  require(!mask || mask->dim(0) == batch || mask->dim(0) == 1,
          "mask_input holds " + std::to_string(mask ? mask->dim(0) : 0) + " masks for " + std::to_string(batch) +
              " prompts; give one mask or one per prompt");
  require(batch <= 4096, "too many prompts in one call: " + std::to_string(batch) + " (at most 4096)");

  std::vector<Prompt> prompts(static_cast<size_t>(batch));
  const int64_t plane = low_res_size * low_res_size;
  for (int64_t b = 0; b < batch; ++b) {
    Prompt& prompt = prompts[static_cast<size_t>(b)];
    if (point_xy) {
      const int64_t n = point_xy->dim(1);
      for (int64_t i = 0; i < n; ++i) {
        const float raw_label = (*point_label)[b * n + i];
        // A label that is not an exact integer must not be rounded into a valid one.
        const bool integral = std::isfinite(raw_label) && std::fabs(raw_label) < 1e6f && raw_label == std::trunc(raw_label);
        const int label = integral ? static_cast<int>(raw_label) : -1;
        prompt.points.push_back({(*point_xy)[(b * n + i) * 2], (*point_xy)[(b * n + i) * 2 + 1], label});
      }
    }
    if (box) {
      const float* v = box->data() + b * 4;
      prompt.box = std::array<float, 4>{v[0], v[1], v[2], v[3]};
    }
    if (mask) {
      const int64_t source = mask->dim(0) == 1 ? 0 : b;
      prompt.mask_input = Tensor::uninitialized({1, low_res_size, low_res_size});
      std::copy(mask->data() + source * plane, mask->data() + (source + 1) * plane, prompt.mask_input.data());
    }
  }
  return prompts;
}

}  // namespace sam2rt::python
