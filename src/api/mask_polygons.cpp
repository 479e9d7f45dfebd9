#include "api/mask_polygons.h"

#include <opencv2/imgproc.hpp>

#include "core/error.h"

namespace sam2rt {

namespace {

std::vector<std::array<int, 2>> simplified(const std::vector<cv::Point>& contour, double tolerance) {
  std::vector<cv::Point> points = contour;
  if (tolerance > 0) cv::approxPolyDP(contour, points, tolerance, /*closed=*/true);
  std::vector<std::array<int, 2>> out;
  out.reserve(points.size());
  for (const cv::Point& p : points) out.push_back({p.x, p.y});
  return out;
}

cv::Mat binary_image(const std::vector<uint8_t>& mask, int width, int height) {
  if (width <= 0 || height <= 0 || mask.size() != static_cast<size_t>(width) * static_cast<size_t>(height)) {
    throw Error("polygons: the mask does not have " + std::to_string(width) + "x" + std::to_string(height) +
                " pixels");
  }
  cv::Mat binary(height, width, CV_8UC1);
  for (int y = 0; y < height; ++y) {
    uint8_t* row = binary.ptr<uint8_t>(y);
    for (int x = 0; x < width; ++x) row[x] = mask[static_cast<size_t>(y) * static_cast<size_t>(width) + x] ? 1 : 0;
  }
  return binary;
}

}  // namespace

std::vector<MaskPolygon> mask_polygons(const std::vector<uint8_t>& mask, int width, int height, double tolerance) {
  if (!(tolerance >= 0)) throw Error("polygons: the simplification tolerance must be >= 0 pixels");
  cv::Mat binary = binary_image(mask, width, height);
  std::vector<std::vector<cv::Point>> contours;
  std::vector<cv::Vec4i> hierarchy;  // next, previous, first child, parent
  cv::findContours(binary, contours, hierarchy, cv::RETR_CCOMP, cv::CHAIN_APPROX_NONE);
  std::vector<MaskPolygon> polygons;
  for (size_t i = 0; i < contours.size(); ++i) {
    if (hierarchy[i][3] >= 0) continue;  // a hole: listed with its parent below
    MaskPolygon polygon;
    polygon.exterior = simplified(contours[i], tolerance);
    for (int child = hierarchy[i][2]; child >= 0; child = hierarchy[static_cast<size_t>(child)][0]) {
      polygon.holes.push_back(simplified(contours[static_cast<size_t>(child)], tolerance));
    }
    polygons.push_back(std::move(polygon));
  }
  return polygons;
}

std::vector<std::vector<std::array<int, 2>>> mask_outer_contours(const std::vector<uint8_t>& mask, int width,
                                                                 int height, double epsilon_factor) {
  if (!(epsilon_factor >= 0)) throw Error("polygons: the simplification factor must be >= 0");
  cv::Mat binary = binary_image(mask, width, height);
  std::vector<std::vector<cv::Point>> contours;
  cv::findContours(binary, contours, cv::RETR_EXTERNAL, cv::CHAIN_APPROX_NONE);
  std::vector<std::vector<std::array<int, 2>>> outlines;
  for (const std::vector<cv::Point>& contour : contours) {
    outlines.push_back(simplified(contour, epsilon_factor * cv::arcLength(contour, /*closed=*/true)));
  }
  return outlines;
}

nlohmann::json polygons_json(const std::vector<MaskPolygon>& polygons) {
  nlohmann::json out = nlohmann::json::array();
  for (const MaskPolygon& p : polygons) out.push_back({{"exterior", p.exterior}, {"holes", p.holes}});
  return out;
}

}  // namespace sam2rt
