#include "api/coco_dataset.h"

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "io/atomic_file.h"
#include "io/mask_rle.h"

namespace sam2rt {

namespace {

nlohmann::json read_report(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("'" + path + "': cannot open the report for the COCO dataset");
  return nlohmann::json::parse(in);
}

nlohmann::json compressed_segmentation(nlohmann::json segmentation) {
  const nlohmann::json& counts = segmentation.at("counts");
  if (counts.is_array()) {
    const UncompressedRle rle{segmentation.at("size").at(0), segmentation.at("size").at(1),
                              counts.get<std::vector<int64_t>>()};
    segmentation["counts"] = coco_rle_string(rle);
  }
  return segmentation;
}

// Adds the image entry and the annotations of one report.
void add_report(const nlohmann::json& report, const std::string& input, int64_t image_id, nlohmann::json& images,
                nlohmann::json& annotations) {
  images.push_back({{"id", image_id},
                    {"file_name", input},
                    {"height", report.at("image_hw").at(0)},
                    {"width", report.at("image_hw").at(1)}});
  for (const nlohmann::json& m : report.at("masks")) {
    annotations.push_back({{"id", static_cast<int64_t>(annotations.size()) + 1},
                           {"image_id", image_id},
                           {"category_id", 1},
                           {"segmentation", compressed_segmentation(m.at("segmentation"))},
                           {"area", m.at("area")},
                           {"bbox", m.at("bbox")},
                           {"iscrowd", 0},
                           {"score", m.at("predicted_iou")},
                           {"stability_score", m.at("stability_score")},
                           {"point_coords", m.at("point_coords")},
                           {"crop_box", m.at("crop_box")}});
  }
}

}  // namespace

nlohmann::json coco_dataset(const std::vector<CocoSource>& sources) {
  nlohmann::json images = nlohmann::json::array(), annotations = nlohmann::json::array();
  for (size_t i = 0; i < sources.size(); ++i) {
    const std::string& path = sources[i].report_path;
    if (!std::filesystem::exists(path)) continue;  // failed inputs have no report
    try {
      add_report(read_report(path), sources[i].input, static_cast<int64_t>(i) + 1, images, annotations);
    } catch (const nlohmann::json::exception& e) {
      throw Error("'" + path + "' is not a segment-everything report (" + e.what() + ")");
    }
  }
  return {{"info", {{"description", "sam2rt everything"}}},
          {"images", images},
          {"annotations", annotations},
          {"categories", {{{"id", 1}, {"name", "object"}, {"supercategory", "object"}}}}};
}

void write_coco_dataset(const std::string& path, const std::vector<CocoSource>& sources) {
  write_file_atomically(path, coco_dataset(sources).dump() + "\n");
}

}  // namespace sam2rt
