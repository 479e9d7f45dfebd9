#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace sam2rt {

// One input of a segment-everything batch and the per-image report
// (amg_report_json, either RLE output mode) written for it.
struct CocoSource {
  std::string input;
  std::string report_path;
};

// The COCO dataset labelling tools import: one image entry per source whose report
// exists (id = its 1-based position among the sources, so ids stay stable when some
// inputs failed), its masks as annotations with COCO compressed RLE segmentation and
// score = predicted IoU. Error naming the file for a report that is not one.
nlohmann::json coco_dataset(const std::vector<CocoSource>& sources);

// coco_dataset as compact JSON with a final newline, written atomically. The CLI and
// the Dask driver both write it here, so their files have the same bytes.
void write_coco_dataset(const std::string& path, const std::vector<CocoSource>& sources);

}  // namespace sam2rt
