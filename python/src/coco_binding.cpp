#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <utility>
#include <vector>

#include "api/coco_dataset.h"
#include "bindings.h"

namespace py = pybind11;

namespace sam2rt::python {

void bind_coco_dataset(py::module_& module) {
  module.def(
      "write_coco_dataset",
      [](const std::string& path, const std::vector<std::pair<std::string, std::string>>& items) {
        std::vector<CocoSource> sources;
        sources.reserve(items.size());
        for (const auto& [input, report] : items) sources.push_back({input, report});
        py::gil_scoped_release no_gil;
        write_coco_dataset(path, sources);
      },
      py::arg("path"), py::arg("items"),
      "Writes the COCO dataset of a segment-everything batch, [(input, report JSON path), ...] in input order, "
      "atomically to path: the bytes `sam2rt everything --coco` writes.");
}

}  // namespace sam2rt::python
