#pragma once

#include <pybind11/numpy.h>

#include <optional>
#include <vector>

#include "model/prompt.h"

namespace sam2rt::python {

// The B prompts of one SAM2ImagePredictor.predict call, from arrays already in
// the official batched layout: points [B, N, 2] (original pixels) with labels
// [B, N], boxes [B, 4] (x0, y0, x1, y1), masks [B or 1, 1, L, L] (a single mask
// applies to every prompt). B comes from the points, else the boxes, else the
// masks; ValueError naming the array when shapes disagree. Values are checked
// later by validate_prompt.
std::vector<Prompt> prompts_from_arrays(const std::optional<pybind11::array>& points,
                                        const std::optional<pybind11::array>& labels,
                                        const std::optional<pybind11::array>& boxes,
                                        const std::optional<pybind11::array>& masks, int64_t low_res_size);

}  // namespace sam2rt::python
