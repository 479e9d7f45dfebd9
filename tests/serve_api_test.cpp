// `sam2rt serve`: the request/response JSON, the image cache, and the real
// binary's HTTP API on a free loopback port (micro model on synthetic weights,
// so encoding takes milliseconds), including the embedded page files and
// "segment everything".
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "api/automatic_mask_generator.h"
#include "api/everything_request.h"
#include "api/image_cache.h"
#include "api/predictor.h"
#include "api/segment_request.h"
#include "core/error.h"
#include "io/base64.h"
#include "io/image.h"
#include "io/mask_rle.h"
#include "kernels/bilinear_resize.h"
#include "kernels/matmul.h"
#include "server_process.h"
#include "test_paths.h"

namespace sam2rt {
namespace {

using nlohmann::json;

// Uncompressed JSON: see cmd_serve.cpp.
constexpr const char* kJsonType = "application/json; charset=utf-8";

std::string micro_config() { return testing::fixtures_dir() + "/micro/sam2.1_micro.yaml"; }
std::string chelsea_path() { return testing::fixtures_dir() + "/images/chelsea_288x112.png"; }

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::shared_ptr<const Sam2Model> micro_model() {
  static const auto model = [] {
    ModelSource source;
    source.synthetic_salt = 0;
    source.config_path = micro_config();
    return Sam2Model::load(source);
  }();
  return model;
}

// A PNG mask of the API as 0/1 per pixel (row-major).
std::vector<uint8_t> png_mask(const std::string& png_base64, int width, int height) {
  const std::string png = base64_decode(png_base64, "png_base64");
  const RgbImage image = decode_image_bytes(reinterpret_cast<const uint8_t*>(png.data()), png.size(), "mask");
  EXPECT_EQ(image.width, width);
  EXPECT_EQ(image.height, height);
  std::vector<uint8_t> mask(static_cast<size_t>(width) * height);
  for (size_t i = 0; i < mask.size() && 3 * i < image.pixels.size(); ++i) mask[i] = image.pixels[3 * i] > 127;
  return mask;
}

// COCO uncompressed RLE (column-major, zeros first) back to a row-major 0/1 mask.
std::vector<uint8_t> rle_mask(const json& rle) {
  const int height = rle["size"][0], width = rle["size"][1];
  std::vector<uint8_t> mask(static_cast<size_t>(width) * height);
  int64_t position = 0;
  uint8_t value = 0;
  for (const auto& count : rle["counts"]) {
    for (int64_t k = 0; k < count.get<int64_t>(); ++k, ++position) {
      const int64_t x = position / height, y = position % height;
      mask[static_cast<size_t>(y * width + x)] = value;
    }
    value ^= 1;
  }
  EXPECT_EQ(position, int64_t{width} * height);
  return mask;
}

std::vector<uint8_t> threshold(const Tensor& masks, int64_t index, float at) {
  const int64_t plane = masks.dim(1) * masks.dim(2);
  std::vector<uint8_t> out(static_cast<size_t>(plane));
  for (int64_t i = 0; i < plane; ++i) out[static_cast<size_t>(i)] = masks.data()[index * plane + i] > at;
  return out;
}

int64_t count_on(const std::vector<uint8_t>& mask) {
  int64_t n = 0;
  for (uint8_t v : mask) n += v != 0;
  return n;
}

// ---------------------------------------------------------------------------
// Request parsing and response building, without a server.

TEST(ServeApiRequest, ParsesPointsBoxAndOptions) {
  const SegmentRequest r = parse_segment_request(
      R"({"points": [[10, 20.5, 1], [0, 112, 0]], "box": [1, 2, 287, 111], "multimask": true, "format": "rle"})",
      288, 112);
  ASSERT_EQ(r.prompt.points.size(), 2u);
  EXPECT_FLOAT_EQ(r.prompt.points[0].x, 10.0f);
  EXPECT_FLOAT_EQ(r.prompt.points[0].y, 20.5f);
  EXPECT_EQ(r.prompt.points[0].label, 1);
  EXPECT_EQ(r.prompt.points[1].label, 0);
  ASSERT_TRUE(r.prompt.box.has_value());
  EXPECT_FLOAT_EQ((*r.prompt.box)[2], 287.0f);
  EXPECT_TRUE(r.multimask);
  EXPECT_EQ(r.format, MaskFormat::rle);

  const SegmentRequest defaults = parse_segment_request(R"({"box": [0, 0, 288, 112], "points": []})", 288, 112);
  EXPECT_FALSE(defaults.multimask);
  EXPECT_EQ(defaults.format, MaskFormat::png);
  EXPECT_TRUE(defaults.prompt.points.empty());
  EXPECT_TRUE(parse_segment_request(R"({"points": [[1, 1, 1]], "box": null})", 288, 112).prompt.box == std::nullopt);
  EXPECT_FALSE(defaults.mask_size.has_value());
}

// As on the command line (--point X,Y), a point without a label is an object point.
TEST(ServeApiRequest, APointsLabelDefaultsToObject) {
  const SegmentRequest r = parse_segment_request(R"({"points": [[10, 20], [30, 40, 0], [50.5, 60]]})", 288, 112);
  ASSERT_EQ(r.prompt.points.size(), 3u);
  EXPECT_EQ(r.prompt.points[0].label, 1);
  EXPECT_FLOAT_EQ(r.prompt.points[0].y, 20.0f);
  EXPECT_EQ(r.prompt.points[1].label, 0);
  EXPECT_EQ(r.prompt.points[2].label, 1);
  EXPECT_FLOAT_EQ(r.prompt.points[2].x, 50.5f);
}

TEST(ServeApiRequest, ParsesMaskSizeAndTheCompressedRleFormat) {
  const SegmentRequest r =
      parse_segment_request(R"({"points": [[10, 20]], "mask_size": [144, 56], "format": "coco_rle"})", 288, 112);
  ASSERT_TRUE(r.mask_size.has_value());
  EXPECT_EQ(r.mask_size->width, 144);
  EXPECT_EQ(r.mask_size->height, 56);
  EXPECT_EQ(r.format, MaskFormat::coco_rle);
  EXPECT_TRUE(parse_segment_request(R"({"points": [[1, 1]], "mask_size": [288, 112]})", 288, 112).mask_size);
  EXPECT_FALSE(parse_segment_request(R"({"points": [[1, 1]], "mask_size": null})", 288, 112).mask_size);
}

TEST(ServeApiRequest, RejectsEveryMalformedRequestWithANamedReason) {
  std::string too_many = R"({"points": [)";
  for (int i = 0; i < 65; ++i) too_many += std::string(i ? "," : "") + "[1, 1, 1]";
  too_many += "]}";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{", "not valid JSON"},
      {"", "not valid JSON"},
      {"[1, 2]", "must be a JSON object"},
      {"{}", "no prompt"},
      {R"({"multimask": true})", "no prompt"},
      {R"({"points": []})", "no prompt"},
      {R"({"points": [[NaN, 1, 1]]})", "not valid JSON"},
      {R"({"points": [[1e999, 1, 1]]})", "out of range"},
      {R"({"points": [[1e38, 1, 1]]})", "must be a finite number"},
      {R"({"points": [["1", 1, 1]]})", "points[0][0] must be a number"},
      {R"({"points": [[1, 1, 7]]})", "label 7"},
      {R"({"points": [[1, 1, 0.5]]})", "label 0.5"},
      {R"({"points": [[1]]})", "points[0] must be [x, y] or [x, y, label]"},
      {R"({"points": [[1, 1, 1, 1]]})", "points[0] must be [x, y] or [x, y, label]"},
      {R"({"points": [[1, 1]], "mask_size": [0, 10]})", "mask_size[0] must be a whole number from 1 to 288"},
      {R"({"points": [[1, 1]], "mask_size": [10, 113]})", "mask_size[1] must be a whole number from 1 to 112"},
      {R"({"points": [[1, 1]], "mask_size": [10.5, 10]})", "mask_size[0] must be a whole number"},
      {R"({"points": [[1, 1]], "mask_size": [10]})", "mask_size must be [width, height]"},
      {R"({"points": [[1, 1]], "mask_size": "small"})", "mask_size must be [width, height]"},
      {R"({"points": [[300, 10, 1]]})", "outside the 288x112 image"},
      {R"({"points": [[-1, 10, 1]]})", "outside"},
      {R"({"points": {"x": 1}})", "points must be an array"},
      {R"({"box": [100, 10, 50, 20]})", "x1 < x0"},
      {R"({"box": [10, 30, 50, 20]})", "x1 < x0 or y1 < y0"},
      {R"({"box": [0, 0, 50]})", "box must be [x0, y0, x1, y1]"},
      {R"({"box": [0, 0, 500, 50]})", "outside"},
      {R"({"points": [[1, 1, 1]], "multimask": "yes"})", "multimask must be true or false"},
      {R"({"points": [[1, 1, 1]], "format": "jpg"})", "format must be"},
      {R"({"point": [[1, 1, 1]]})", "unknown field \"point\""},
      {too_many, "too many points: 65"},
  };
  for (const auto& [body, expected] : cases) {
    try {
      parse_segment_request(body, 288, 112);
      ADD_FAILURE() << "accepted " << body;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos)
          << "body " << body << "\n  message: " << e.what() << "\n  expected to contain: " << expected;
    }
  }
}

TEST(ServeApiRequest, RleIsColumnMajorAndStartsWithZeros) {
  // 3 wide, 2 high; row-major:
  //   0 1 1
  //   0 0 1
  const std::vector<uint8_t> mask = {0, 255, 255, 0, 0, 255};
  const json rle = mask_to_rle(mask.data(), 3, 2);
  EXPECT_EQ(rle["size"], json::array({2, 3}));
  // Column-major pixels: 0 0 | 1 0 | 1 1 -> runs 2 zeros, 1 one, 1 zero, 2 ones.
  EXPECT_EQ(rle["counts"], json::array({2, 1, 1, 2}));
  const std::vector<uint8_t> full(6, 1);
  EXPECT_EQ(mask_to_rle(full.data(), 3, 2)["counts"], json::array({0, 6}));
  const std::vector<uint8_t> empty(6, 0);
  EXPECT_EQ(mask_to_rle(empty.data(), 3, 2)["counts"], json::array({6}));
}

TEST(ServeApiRequest, Base64MatchesRfc4648Vectors) {
  auto encode = [](const std::string& s) { return base64_encode(std::vector<uint8_t>(s.begin(), s.end())); };
  EXPECT_EQ(encode(""), "");
  EXPECT_EQ(encode("f"), "Zg==");
  EXPECT_EQ(encode("fo"), "Zm8=");
  EXPECT_EQ(encode("foo"), "Zm9v");
  EXPECT_EQ(encode("foob"), "Zm9vYg==");
  EXPECT_EQ(encode("fooba"), "Zm9vYmE=");
  EXPECT_EQ(encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(base64_encode({0xff, 0xfe, 0x00}), "//4A");
}

TEST(ServeApiRequest, ResponseDescribesEveryMaskOfThePrediction) {
  MaskPrediction prediction;
  prediction.masks = Tensor({2, 2, 3});
  // Mask 0: pixels (x=1, y=0) and (x=2, y=1); mask 1: empty.
  prediction.masks[1] = 5.0f;
  prediction.masks[5] = 0.5f;
  prediction.masks[6 + 0] = -1.0f;
  prediction.iou_predictions = {0.25f, 0.75f};
  prediction.object_score_logit = 3.5f;
  prediction.token_indices = {1, 3};
  const json png = segment_response(prediction, 0.0f, MaskFormat::png, 1.5);
  ASSERT_EQ(png["masks"].size(), 2u);
  // The names of `sam2rt segment --json`.
  EXPECT_EQ(png["best_index"], 1);
  EXPECT_FLOAT_EQ(png["object_score_logit"].get<float>(), 3.5f);
  EXPECT_DOUBLE_EQ(png["timing_ms"]["decode"].get<double>(), 1.5);
  EXPECT_EQ(png["mask_size"], json::array({3, 2}));
  EXPECT_EQ(png["masks"][0]["token"], 1);
  EXPECT_EQ(png["masks"][1]["token"], 3);
  EXPECT_FALSE(png.contains("best") || png.contains("object_score") || png.contains("decode_ms"));
  EXPECT_FLOAT_EQ(png["masks"][0]["iou"].get<float>(), 0.25f);
  EXPECT_EQ(png["masks"][0]["area"], 2);
  EXPECT_EQ(png["masks"][0]["bbox"], json::array({1, 0, 3, 2}));
  EXPECT_EQ(png_mask(png["masks"][0]["png_base64"], 3, 2), (std::vector<uint8_t>{0, 1, 0, 0, 0, 1}));
  EXPECT_EQ(png["masks"][1]["area"], 0);
  EXPECT_TRUE(png["masks"][1]["bbox"].is_null());
  EXPECT_FALSE(png["masks"][0].contains("rle"));

  const json rle = segment_response(prediction, 0.0f, MaskFormat::rle, 1.5);
  EXPECT_FALSE(rle["masks"][0].contains("png_base64"));
  EXPECT_EQ(rle_mask(rle["masks"][0]["rle"]), (std::vector<uint8_t>{0, 1, 0, 0, 0, 1}));

  const json coco = segment_response(prediction, 0.0f, MaskFormat::coco_rle, 1.5);
  EXPECT_EQ(coco["masks"][0]["rle"]["size"], json::array({2, 3}));
  // Column-major runs 2 off, 1 on, 2 off, 1 on; pycocotools' rleToString stores
  // counts from the 4th on as the difference to the one two before (1 - 1 = 0).
  EXPECT_EQ(coco["masks"][0]["rle"]["counts"], "2120");
  EXPECT_FALSE(coco["masks"][0].contains("png_base64"));
}

// ---------------------------------------------------------------------------
// Everything: the generator's parameters in, its records out.

TEST(ServeApiEverything, ParsesEveryOfficialParameterAndKeepsTheDefaults) {
  const AmgParams defaults;
  for (const char* body : {"", "  ", "{}"}) {
    const AmgParams p = parse_everything_request(body);
    EXPECT_EQ(p.points_per_side, defaults.points_per_side) << body;
    EXPECT_EQ(p.points_per_batch, defaults.points_per_batch);
    EXPECT_EQ(p.pred_iou_thresh, defaults.pred_iou_thresh);
    EXPECT_EQ(p.stability_score_thresh, defaults.stability_score_thresh);
    EXPECT_EQ(p.crop_overlap_ratio, defaults.crop_overlap_ratio);
    EXPECT_TRUE(p.point_grids.empty());
    EXPECT_EQ(p.multimask_output, defaults.multimask_output);
  }
  const AmgParams p = parse_everything_request(R"({
      "points_per_side": 6, "points_per_batch": 20, "pred_iou_thresh": 0.55, "stability_score_thresh": 0.8,
      "stability_score_offset": 0.5, "mask_threshold": 2.0, "box_nms_thresh": 0.9, "crop_n_layers": 1,
      "crop_nms_thresh": 0.6, "crop_overlap_ratio": 0.25, "crop_n_points_downscale_factor": 2,
      "min_mask_region_area": 6, "use_m2m": true, "multimask_output": false})");
  EXPECT_EQ(p.points_per_side, 6);
  EXPECT_EQ(p.points_per_batch, 20);
  EXPECT_EQ(p.pred_iou_thresh, 0.55);
  EXPECT_EQ(p.stability_score_thresh, 0.8);
  EXPECT_EQ(p.stability_score_offset, 0.5);
  EXPECT_EQ(p.mask_threshold, 2.0);
  EXPECT_EQ(p.box_nms_thresh, 0.9);
  EXPECT_EQ(p.crop_n_layers, 1);
  EXPECT_EQ(p.crop_nms_thresh, 0.6);
  EXPECT_EQ(p.crop_overlap_ratio, 0.25);
  EXPECT_EQ(p.crop_n_points_downscale_factor, 2);
  EXPECT_EQ(p.min_mask_region_area, 6.0);
  EXPECT_TRUE(p.use_m2m);
  EXPECT_FALSE(p.multimask_output);

  const AmgParams grids =
      parse_everything_request(R"({"points_per_side": null, "point_grids": [[[0.25, 0.75], [0.5, 0.5]]]})");
  EXPECT_EQ(grids.points_per_side, std::nullopt);
  ASSERT_EQ(grids.point_grids.size(), 1u);
  ASSERT_EQ(grids.point_grids[0].size(), 2u);
  EXPECT_EQ(grids.point_grids[0][0][0], 0.25);
  EXPECT_EQ(grids.point_grids[0][0][1], 0.75);
}

TEST(ServeApiEverything, RejectsEveryBadParameterWithOneLineThatNamesIt) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{", "not valid JSON"},
      {"[4]", "must be a JSON object"},
      {R"({"points_per_side": 4, "bogus": 1})", "unknown parameter \"bogus\""},
      {R"({"output_mode": "binary_mask"})", "unknown parameter \"output_mode\""},
      {R"({"points_per_side": 4.5})", "points_per_side must be an integer"},
      {R"({"points_per_side": "4"})", "points_per_side must be an integer"},
      {R"({"points_per_side": 1e12})", "points_per_side must be an integer"},
      {R"({"points_per_batch": 99999999999})", "points_per_batch must be an integer"},
      {R"({"pred_iou_thresh": "high"})", "pred_iou_thresh must be a number"},
      {R"({"box_nms_thresh": null})", "box_nms_thresh must be a number"},
      {R"({"use_m2m": 1})", "use_m2m must be true or false"},
      {R"({"points_per_side": null, "point_grids": [[[0.5]]]})", "point_grids[0][0] must be [x, y]"},
      {R"({"points_per_side": null, "point_grids": [[[0.5, "a"]]]})", "point_grids[0][0][1] must be a number"},
      {R"({"points_per_side": null, "point_grids": {"a": 1}})", "point_grids must be an array"},
      {R"({"points_per_side": 1000})", "too many points: these parameters prompt at 1000000 grid points"},
  };
  for (const auto& [body, expected] : cases) {
    try {
      parse_everything_request(body);
      ADD_FAILURE() << "accepted " << body;
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find(expected), std::string::npos)
          << "body " << body << "\n  message: " << message << "\n  expected to contain: " << expected;
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
  }
  // Values of the right type that the generator itself refuses: its own one-line error.
  for (const std::string body :
       {R"({"points_per_side": -1})", R"({"points_per_side": 0})", R"({"pred_iou_thresh": 1.5})",
        R"({"crop_overlap_ratio": 1.0})", R"({"points_per_batch": 0})", R"({"crop_n_layers": -1})",
        R"({"points_per_side": null})", R"({"point_grids": [[[0.5, 0.5]]]})"}) {
    try {
      parse_everything_request(body);
      ADD_FAILURE() << "accepted " << body;
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_FALSE(message.empty());
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
  }
  EXPECT_THROW(parse_everything_request(R"({"points_per_side": 4})", EverythingLimits{15}), Error);
  EXPECT_NO_THROW(parse_everything_request(R"({"points_per_side": 4})", EverythingLimits{16}));
}

TEST(ServeApiEverything, CountsTheGridPointsOfEveryCropLayer) {
  AmgParams p;
  EXPECT_EQ(everything_point_count(p), 32 * 32);
  p.crop_n_layers = 1;
  EXPECT_EQ(everything_point_count(p), 32 * 32 + 4 * 32 * 32);
  p.crop_n_points_downscale_factor = 2;
  EXPECT_EQ(everything_point_count(p), 32 * 32 + 4 * 16 * 16);
  p.crop_n_layers = 2;
  p.points_per_side = 5;  // 5 -> 2 -> 1 per side, as the official int(n / scale**i)
  EXPECT_EQ(everything_point_count(p), 25 + 4 * 4 + 16 * 1);
  p.points_per_side = std::nullopt;
  p.point_grids = {{{0.1, 0.1}, {0.2, 0.2}, {0.3, 0.3}}, {{0.5, 0.5}}, {{0.5, 0.5}, {0.6, 0.6}}};
  EXPECT_EQ(everything_point_count(p), 3 + 4 * 1 + 16 * 2);
  p.points_per_side = 1 << 20;
  p.crop_n_layers = 40;
  p.crop_n_points_downscale_factor = 1;
  EXPECT_GT(everything_point_count(p), int64_t{1} << 32);  // saturates, no overflow
}

TEST(ServeApiEverything, ResponseUsesTheOfficialRecordNamesAndCocoStrings) {
  AmgMask mask;
  // 3 wide, 2 high, column-major runs: 2 off, 1 on, 1 off, 2 on.
  mask.segmentation = UncompressedRle{2, 3, {2, 1, 1, 2}};
  mask.area = 3;
  mask.bbox = {1, 0, 1, 1};
  mask.predicted_iou = 0.75f;
  mask.point_coords = {1.5f, 0.25f};
  mask.stability_score = 0.5f;
  mask.crop_box = {0, 0, 3, 2};
  const json answer = everything_response({mask, mask}, 12.5);
  EXPECT_DOUBLE_EQ(answer["generate_ms"].get<double>(), 12.5);
  ASSERT_EQ(answer["masks"].size(), 2u);
  const json& record = answer["masks"][0];
  EXPECT_EQ(record.size(), 7u) << record.dump();
  EXPECT_EQ(record["segmentation"]["size"], json::array({2, 3}));
  // pycocotools' rleToString of [2, 1, 1, 2]: the 4th count is stored as 2 - 1.
  EXPECT_EQ(record["segmentation"]["counts"], "2111");
  EXPECT_EQ(record["area"], 3);
  EXPECT_EQ(record["bbox"], json::array({1, 0, 1, 1}));
  EXPECT_EQ(record["predicted_iou"].get<double>(), 0.75);
  EXPECT_EQ(record["point_coords"], json::array({json::array({1.5, 0.25})}));
  EXPECT_EQ(record["stability_score"].get<double>(), 0.5);
  EXPECT_EQ(record["crop_box"], json::array({0, 0, 3, 2}));
  EXPECT_TRUE(everything_response({}, 0)["masks"].is_array());
}

// ---------------------------------------------------------------------------
// The image cache.

std::shared_ptr<const Predictor> predictor_with_features(int width, int height) {
  auto model = micro_model();
  const ModelConfig& c = model->config();
  const int64_t d = c.embed_dim(), e = c.image_embedding_size();
  auto predictor = std::make_shared<Predictor>(model);
  predictor->set_features(
      DecoderFeatures{Tensor({1, d, e, e}), Tensor({1, d / 4, 2 * e, 2 * e}), Tensor({1, d / 8, 4 * e, 4 * e})},
      width, height);
  return predictor;
}

// From the model's shapes (a device's features are not downloaded for it): the bytes of the features.
TEST(ServeApiCache, ChargesTheBytesOfTheDecoderFeatures) {
  const auto predictor = predictor_with_features(10, 10);
  const DecoderFeatures& f = predictor->features();
  EXPECT_EQ(ImageCache::charge(*predictor),
            (f.image_embed.numel() + f.feat_s1.numel() + f.feat_s0.numel()) * static_cast<int64_t>(sizeof(float)));
  EXPECT_THROW(ImageCache::charge(Predictor(micro_model())), Error);
}

TEST(ServeApiCache, EvictsTheLeastRecentlyUsedImageBeyondTheBudget) {
  const auto a = predictor_with_features(10, 10);
  const int64_t entry = ImageCache::charge(*a);
  ASSERT_GT(entry, 0);
  ImageCache cache(entry * 2 + entry / 2);
  const std::string id_a = cache.insert(a);
  const std::string id_b = cache.insert(predictor_with_features(20, 20));
  EXPECT_NE(id_a, id_b);
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.bytes(), 2 * entry);
  ASSERT_EQ(cache.find(id_a), a);  // a is now the most recently used
  const std::string id_c = cache.insert(predictor_with_features(30, 30));
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.find(id_b), nullptr);
  ASSERT_NE(cache.find(id_a), nullptr);
  ASSERT_NE(cache.find(id_c), nullptr);
  EXPECT_EQ(cache.find(id_c)->orig_width(), 30);
  EXPECT_TRUE(cache.erase(id_a));
  EXPECT_FALSE(cache.erase(id_a));
  EXPECT_EQ(cache.find(id_a), nullptr);
  EXPECT_EQ(cache.bytes(), entry);
}

TEST(ServeApiCache, KeepsTheNewestImageEvenWhenItAloneExceedsTheBudget) {
  ImageCache cache(1);
  const std::string first = cache.insert(predictor_with_features(10, 10));
  const std::string second = cache.insert(predictor_with_features(10, 10));
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(cache.find(first), nullptr);
  EXPECT_NE(cache.find(second), nullptr);
  EXPECT_THROW(ImageCache(0), Error);
  EXPECT_THROW(cache.insert(std::make_shared<Predictor>(micro_model())), Error);
}

// ---------------------------------------------------------------------------
// The real `sam2rt serve` binary (ServerProcess: server_process.h).

using testing::ServerProcess;

class ServeApiHttp : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new ServerProcess(); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    ASSERT_GT(server_->port(), 0) << "no URL line from sam2rt serve, got '" << server_->url() << "'";
  }

  static json upload_chelsea(httplib::Client& client) {
    const auto res = client.Post("/v1/images", read_bytes(chelsea_path()), "image/png");
    if (!res || res->status != 201) {
      ADD_FAILURE() << "upload failed: " << (res ? res->status : -1) << " " << (res ? res->body : "");
      return json();
    }
    return json::parse(res->body);
  }

  static json segment(httplib::Client& client, const std::string& id, const json& request, int expected_status = 200) {
    const auto res = client.Post("/v1/images/" + id + "/segment", request.dump(), "application/json");
    if (!res) {
      ADD_FAILURE() << "no response: " << httplib::to_string(res.error());
      return json();
    }
    EXPECT_EQ(res->status, expected_status) << res->body;
    EXPECT_EQ(res->get_header_value("Content-Type"), kJsonType);
    return json::parse(res->body);
  }

  static ServerProcess* server_;
};

ServerProcess* ServeApiHttp::server_ = nullptr;

// The CLI starts itself again with the environment the engine runs best in
// (tools/engine_environment.h): libgomp's spinning shortened unless the caller
// chose a wait policy.
TEST_F(ServeApiHttp, RunsWithTheEngineEnvironment) {
  std::ifstream file("/proc/" + std::to_string(server_->pid()) + "/environ", std::ios::binary);
  ASSERT_TRUE(file) << "no /proc entry for the server";
  std::map<std::string, std::string> environment;
  for (std::string entry; std::getline(file, entry, '\0');) {
    const size_t equals = entry.find('=');
    if (equals != std::string::npos) environment[entry.substr(0, equals)] = entry.substr(equals + 1);
  }
  const char* user_spin_count = std::getenv("GOMP_SPINCOUNT");
  const bool user_chose = std::getenv("OMP_WAIT_POLICY") != nullptr || user_spin_count != nullptr;
  EXPECT_EQ(environment["GOMP_SPINCOUNT"], user_chose ? std::string(user_spin_count ? user_spin_count : "") : "10000");
}

TEST_F(ServeApiHttp, PrintsItsUrlAndServesThePageAndHealth) {
  EXPECT_TRUE(std::regex_match(server_->url(), std::regex(R"(http://127\.0\.0\.1:\d+/)"))) << server_->url();
  auto client = server_->client();
  const auto page = client.Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_EQ(page->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_NE(page->body.find("<canvas id=\"mask\">"), std::string::npos);
  EXPECT_NE(page->body.find("<button id=\"everything\""), std::string::npos);
  // The page's own files, byte for byte as in web/ (embedded at build time).
  const std::vector<std::pair<std::string, std::string>> files = {
      {"/", "text/html; charset=utf-8"}, {"/app.css", "text/css; charset=utf-8"},
      {"/app.js", "text/javascript; charset=utf-8"}, {"/video.js", "text/javascript; charset=utf-8"}};
  for (const auto& [path, type] : files) {
    SCOPED_TRACE(path);
    const auto res = client.Get(path);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200);
    EXPECT_EQ(res->get_header_value("Content-Type"), type);
    EXPECT_EQ(res->get_header_value("X-Content-Type-Options"), "nosniff");
    const std::string source = std::string(SAM2RT_SOURCE_DIR) + "/web/" + (path == "/" ? "index.html" : path.substr(1));
    const std::string expected = read_bytes(source);
    ASSERT_FALSE(expected.empty()) << source;
    EXPECT_EQ(res->body, expected);
    EXPECT_NE(page->body.find(path == "/" ? "<!doctype html>" : "\"" + path + "\""), std::string::npos);
  }
  const auto lookalike = client.Get("/app-css");
  ASSERT_TRUE(lookalike);
  EXPECT_EQ(lookalike->status, 404);
  const auto health = client.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  const json body = json::parse(health->body);
  EXPECT_EQ(body["status"], "ok");
  EXPECT_EQ(body["synthetic_weights"], true);
  EXPECT_EQ(body["precision"], "fp32");
  EXPECT_EQ(body["device"], "cpu");
}

TEST_F(ServeApiHttp, UploadsOnceAndSegmentsWithPointsBoxMultimaskPngAndRle) {
  auto client = server_->client();
  const json image = upload_chelsea(client);
  ASSERT_TRUE(image.contains("id"));
  EXPECT_EQ(image["width"], 288);
  EXPECT_EQ(image["height"], 112);
  EXPECT_GE(image["encode_ms"].get<double>(), 0.0);
  const std::string id = image["id"];

  // The same prompts run in-process must give the same masks.
  Predictor reference(micro_model());
  reference.set_image(decode_image_file(chelsea_path()));
  const float at = micro_model()->config().mask_threshold;

  struct Case {
    json request;
    Prompt prompt;
    bool multimask;
  };
  const std::vector<Case> cases = {
      {{{"points", {{100, 50, 1}}}, {"multimask", true}}, Prompt{{{100, 50, 1}}, std::nullopt, {}}, true},
      {{{"points", {{100, 50, 1}, {200, 30, 0}}}}, Prompt{{{100, 50, 1}, {200, 30, 0}}, std::nullopt, {}}, false},
      {{{"box", {40, 10, 250, 100}}}, Prompt{{}, std::array<float, 4>{40, 10, 250, 100}, {}}, false},
      {{{"points", {{120.5, 60.25, 1}}}, {"box", {40, 10, 250, 100}}, {"multimask", true}},
       Prompt{{{120.5f, 60.25f, 1}}, std::array<float, 4>{40, 10, 250, 100}, {}},
       true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.request.dump());
    const MaskPrediction expected = reference.predict(c.prompt, c.multimask);
    json png_request = c.request, rle_request = c.request;
    rle_request["format"] = "rle";
    const json png = segment(client, id, png_request);
    const json rle = segment(client, id, rle_request);
    ASSERT_EQ(png["masks"].size(), static_cast<size_t>(expected.masks.dim(0)));
    ASSERT_EQ(rle["masks"].size(), png["masks"].size());
    EXPECT_EQ(png["masks"].size(), c.multimask ? 3u : 1u);
    EXPECT_FLOAT_EQ(png["object_score_logit"].get<float>(), expected.object_score_logit);
    EXPECT_GE(png["timing_ms"]["decode"].get<double>(), 0.0);
    for (size_t m = 0; m < png["masks"].size(); ++m) {
      const json& entry = png["masks"][m];
      const std::vector<uint8_t> want = threshold(expected.masks, static_cast<int64_t>(m), at);
      const std::vector<uint8_t> from_png = png_mask(entry["png_base64"], 288, 112);
      EXPECT_EQ(from_png, want) << "mask " << m;
      EXPECT_EQ(rle_mask(rle["masks"][m]["rle"]), want) << "mask " << m;
      EXPECT_EQ(entry["area"].get<int64_t>(), count_on(want));
      EXPECT_FLOAT_EQ(entry["iou"].get<float>(), expected.iou_predictions[m]);
      EXPECT_TRUE(entry["bbox"].is_array() || entry["area"] == 0);
    }
  }
}

// A page asks for masks at the size it shows them: the decoder's logits resized
// straight to that size; at the image's size they are the full masks.
TEST_F(ServeApiHttp, MaskSizeGivesTheLogitsResizedToThatSize) {
  auto client = server_->client();
  const std::string id = upload_chelsea(client)["id"];
  Predictor reference(micro_model());
  reference.set_image(decode_image_file(chelsea_path()));
  const float at = micro_model()->config().mask_threshold;
  const Prompt prompt{{{100, 50, 1}}, std::nullopt, {}};
  const MaskPrediction low_res = reference.predict_batch_low_res({prompt}, true).front();
  const Tensor small = bilinear_resize(low_res.low_res_masks, 40, 100);

  const json answer = segment(client, id, {{"points", {{100, 50}}}, {"multimask", true}, {"mask_size", {100, 40}}});
  EXPECT_EQ(answer["mask_size"], json::array({100, 40}));
  ASSERT_EQ(answer["masks"].size(), 3u);
  for (size_t m = 0; m < 3; ++m) {
    const std::vector<uint8_t> want = threshold(small, static_cast<int64_t>(m), at);
    EXPECT_EQ(png_mask(answer["masks"][m]["png_base64"], 100, 40), want) << "mask " << m;
    EXPECT_EQ(answer["masks"][m]["area"].get<int64_t>(), count_on(want));
  }
  const json full = segment(client, id, {{"points", {{100, 50, 1}}}, {"multimask", true}, {"format", "rle"}});
  const json same = segment(client, id,
                            {{"points", {{100, 50, 1}}}, {"multimask", true}, {"format", "rle"}, {"mask_size", {288, 112}}});
  EXPECT_EQ(full["mask_size"], json::array({288, 112}));
  EXPECT_EQ(same["masks"], full["masks"]);
  const json refused = segment(client, id, {{"points", {{1, 1}}}, {"mask_size", {289, 10}}}, 400);
  EXPECT_NE(refused["error"].get<std::string>().find("mask_size[0]"), std::string::npos) << refused.dump();
}

TEST_F(ServeApiHttp, APointWithoutLabelIsAnObjectPointAndCocoRleDecodesToTheMask) {
  auto client = server_->client();
  const std::string id = upload_chelsea(client)["id"];
  const json labelled = segment(client, id, {{"points", {{100, 50, 1}}}, {"format", "rle"}});
  const json bare = segment(client, id, {{"points", {{100, 50}}}, {"format", "coco_rle"}});
  ASSERT_EQ(bare["masks"].size(), 1u);
  EXPECT_EQ(bare["object_score_logit"], labelled["object_score_logit"]);
  const json& rle = bare["masks"][0]["rle"];
  EXPECT_EQ(rle["size"], json::array({112, 288}));
  ASSERT_TRUE(rle["counts"].is_string());
  EXPECT_EQ(decode_rle(coco_rle_from_string(rle["counts"], 112, 288)), rle_mask(labelled["masks"][0]["rle"]));
}

// Browsers accept Brotli; httplib's (at its slowest quality) would add ~100 ms to every answer.
TEST_F(ServeApiHttp, AnswersGoUncompressedEvenWhenTheClientAcceptsBrotli) {
  auto client = server_->client();
  const std::string id = upload_chelsea(client)["id"];
  const httplib::Headers headers = {{"Accept-Encoding", "gzip, deflate, br"}};
  const auto res = client.Post("/v1/images/" + id + "/segment", headers, R"({"points": [[100, 50]], "format": "rle"})",
                               "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(res->get_header_value("Content-Type"), kJsonType);
  EXPECT_FALSE(res->has_header("Content-Encoding")) << res->get_header_value("Content-Encoding");
  EXPECT_NO_THROW(json::parse(res->body));
}

// What `curl -F file=@photo.png` sends; the field's name does not matter.
TEST_F(ServeApiHttp, AcceptsMultipartFormDataUploads) {
  auto client = server_->client();
  const std::string png = read_bytes(chelsea_path());
  const auto res = client.Post("/v1/images", httplib::MultipartFormDataItems{{"file", png, "chelsea.png", "image/png"}});
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 201) << res->body;
  const json image = json::parse(res->body);
  EXPECT_EQ(image["width"], 288);
  EXPECT_EQ(image["height"], 112);
  const json from_form = segment(client, image["id"], {{"points", {{100, 50}}}, {"format", "rle"}});
  const json from_bytes = segment(client, upload_chelsea(client)["id"], {{"points", {{100, 50}}}, {"format", "rle"}});
  EXPECT_EQ(from_form["masks"], from_bytes["masks"]);

  struct Case {
    httplib::MultipartFormDataItems items;
    std::string message;
  };
  // One field without a file name: curl -F "file=<photo.png".
  const auto field = client.Post("/v1/images", httplib::MultipartFormDataItems{{"file", png, "", ""}});
  ASSERT_TRUE(field);
  EXPECT_EQ(field->status, 201) << field->body;

  const std::vector<Case> cases = {
      {{{"note", "hello", "", ""}, {"other", "world", "", ""}}, "holds no file"},
      {{{"file", png, "a.png", "image/png"}, {"other", png, "b.png", "image/png"}}, "several files"},
      {{{"file", "", "empty.png", "image/png"}}, "is empty"},
      {{{"file", "not an image", "photo.webp", "image/webp"}}, "uploaded image"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.message);
    const auto bad = client.Post("/v1/images", c.items);
    ASSERT_TRUE(bad);
    EXPECT_EQ(bad->status, 400) << bad->body;
    const std::string error = json::parse(bad->body)["error"];
    EXPECT_NE(error.find(c.message), std::string::npos) << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
  // A form whose body is not one (no boundary): httplib refuses it before the handler.
  const auto broken = client.Post("/v1/images", png, "multipart/form-data");
  ASSERT_TRUE(broken);
  EXPECT_EQ(broken->status, 400) << broken->body;
  EXPECT_NE(json::parse(broken->body)["error"].get<std::string>().find("malformed multipart/form-data"),
            std::string::npos) << broken->body;
  EXPECT_TRUE(server_->alive());
}

// Everything's answer is exactly the in-process generator's on the decoded upload.
TEST_F(ServeApiHttp, EverythingAnswersTheGeneratorsRecordsForTheUploadedPhoto) {
  auto client = server_->client();
  const std::string id = upload_chelsea(client)["id"];
  // Every filter open: the synthetic weights' masks would not pass the official thresholds.
  const json request = {{"points_per_side", 4}, {"pred_iou_thresh", 0.0}, {"stability_score_thresh", 0.0},
                        {"box_nms_thresh", 1.0}};
  const auto res = client.Post("/v1/images/" + id + "/everything", request.dump(), "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(res->get_header_value("Content-Type"), kJsonType);
  const json answer = json::parse(res->body);
  ASSERT_TRUE(answer["masks"].is_array());
  EXPECT_GE(answer["generate_ms"].get<double>(), 0.0);
  ASSERT_GT(answer["masks"].size(), 1u);
  EXPECT_LE(answer["masks"].size(), 4u * 4u * 3u);

  const AmgParams params = parse_everything_request(request.dump());
  const std::vector<AmgMask> expected =
      AutomaticMaskGenerator(micro_model(), params).generate(decode_image_file(chelsea_path()));
  EXPECT_EQ(answer["masks"], everything_response(expected, 0)["masks"]);

  for (const json& record : answer["masks"]) {
    SCOPED_TRACE(record.dump().substr(0, 200));
    EXPECT_EQ(record["segmentation"]["size"], json::array({112, 288}));
    const UncompressedRle rle = coco_rle_from_string(record["segmentation"]["counts"], 112, 288);
    EXPECT_EQ(record["area"].get<int64_t>(), rle_area(rle));
    EXPECT_EQ(record["crop_box"], json::array({0, 0, 288, 112}));
    ASSERT_EQ(record["point_coords"].size(), 1u);
    EXPECT_EQ(record["point_coords"][0].size(), 2u);
    EXPECT_TRUE(record["predicted_iou"].is_number() && record["stability_score"].is_number());
    EXPECT_EQ(record["bbox"].size(), 4u);
  }
}

TEST_F(ServeApiHttp, EverythingRefusesBadParametersAndUnknownImages) {
  auto client = server_->client();
  const std::string id = upload_chelsea(client)["id"];
  const std::string path = "/v1/images/" + id + "/everything";
  struct Case {
    std::string path, body;
    int status;
    std::string message;
  };
  const std::vector<Case> cases = {
      {path, R"({"points_per_side": -1})", 400, ""},
      {path, R"({"points_per_side": 4, "pred_iou_thresh": 2})", 400, ""},
      {path, R"({"points_per_side": 4, "bogus": true})", 400, "unknown parameter \"bogus\""},
      {path, R"({"points_per_side": "4"})", 400, "points_per_side must be an integer"},
      {path, R"({"points_per_side": 4)", 400, "not valid JSON"},
      {path, R"({"points_per_side": 200})", 400, "--max-everything-points"},
      {"/v1/images/0123456789abcdef0123456789abcdef/everything", R"({"points_per_side": 4})", 404,
       "unknown image id"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.path + " " + c.body);
    const auto res = client.Post(c.path, c.body, "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, c.status) << res->body;
    EXPECT_EQ(res->get_header_value("Content-Type"), kJsonType);
    const json body = json::parse(res->body);
    ASSERT_TRUE(body["error"].is_string()) << res->body;
    EXPECT_NE(body["error"].get<std::string>().find(c.message), std::string::npos) << res->body;
    EXPECT_FALSE(body["error"].get<std::string>().empty());
  }
  const auto wrong_method = client.Get(path);
  ASSERT_TRUE(wrong_method);
  EXPECT_EQ(wrong_method->status, 405);
  EXPECT_EQ(wrong_method->get_header_value("Allow"), "POST");
  EXPECT_TRUE(server_->alive());
}

TEST_F(ServeApiHttp, EightConcurrentClientsGetFiftyAnswersEachWithoutErrors) {
  auto client = server_->client();
  const std::string id = upload_chelsea(client)["id"];
  const json request = {{"points", {{150, 60, 1}}}, {"multimask", true}, {"format", "rle"}};
  const json reference = segment(client, id, request);
  std::atomic<int> errors{0}, different{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 8; ++t) {
    clients.emplace_back([&] {
      auto own = server_->client();
      for (int i = 0; i < 50; ++i) {
        const auto res = own.Post("/v1/images/" + id + "/segment", request.dump(), "application/json");
        if (!res || res->status != 200) {
          ++errors;
          continue;
        }
        const json body = json::parse(res->body);
        if (body["masks"] != reference["masks"]) ++different;
      }
    });
  }
  for (auto& c : clients) c.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(different.load(), 0);
}

TEST_F(ServeApiHttp, BadRequestsGetA4xxJsonErrorAndTheServerKeepsServing) {
  auto client = server_->client();
  const std::string id = upload_chelsea(client)["id"];
  const std::string segment_path = "/v1/images/" + id + "/segment";
  std::string too_many = R"({"points": [)";
  for (int i = 0; i < 65; ++i) too_many += std::string(i ? "," : "") + "[1, 1, 1]";
  too_many += "]}";
  const std::string png = read_bytes(chelsea_path());

  struct Case {
    std::string method, path, body;
    int status;
  };
  const std::vector<Case> cases = {
      {"POST", segment_path, "{", 400},
      {"POST", segment_path, "", 400},
      {"POST", segment_path, "{}", 400},
      {"POST", segment_path, R"({"multimask": true})", 400},
      {"POST", segment_path, R"({"points": [[NaN, 1, 1]]})", 400},
      {"POST", segment_path, R"({"points": [[1e999, 1, 1]]})", 400},
      {"POST", segment_path, R"({"points": [[1, 1, 7]]})", 400},
      {"POST", segment_path, R"({"points": [[289, 1, 1]]})", 400},
      {"POST", segment_path, R"({"points": [[1, 113, 1]]})", 400},
      {"POST", segment_path, R"({"box": [100, 10, 50, 20]})", 400},
      {"POST", segment_path, too_many, 400},
      {"POST", segment_path, R"({"points": [[1, 1, 1]], "format": "gif"})", 400},
      {"POST", "/v1/images/0123456789abcdef0123456789abcdef/segment", R"({"points": [[1, 1, 1]]})", 404},
      {"POST", "/v1/images/not-an-id/segment", R"({"points": [[1, 1, 1]]})", 404},
      {"DELETE", "/v1/images/0123456789abcdef0123456789abcdef", "", 404},
      {"POST", "/v1/images", std::string(51 * 1024 * 1024, '\0'), 413},
      {"POST", "/v1/images", "this is not an image", 400},
      {"POST", "/v1/images", "", 400},
      {"POST", "/v1/images", png.substr(0, png.size() / 2), 400},
      {"GET", "/v1/images", "", 405},
      {"GET", segment_path, "", 405},
      {"PUT", segment_path, "{}", 405},
      {"POST", "/healthz", "", 405},
      {"DELETE", "/", "", 405},
      {"GET", "/no/such/page", "", 404},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.method + " " + c.path + " " + c.body.substr(0, 60));
    httplib::Result res = c.method == "GET"      ? client.Get(c.path)
                          : c.method == "DELETE" ? client.Delete(c.path)
                          : c.method == "PUT"    ? client.Put(c.path, c.body, "application/json")
                                                 : client.Post(c.path, c.body, "application/octet-stream");
    ASSERT_TRUE(res) << httplib::to_string(res.error());
    EXPECT_EQ(res->status, c.status) << res->body;
    EXPECT_EQ(res->get_header_value("Content-Type"), kJsonType);
    json body;
    ASSERT_NO_THROW(body = json::parse(res->body)) << res->body;
    ASSERT_TRUE(body.contains("error") && body["error"].is_string()) << res->body;
    EXPECT_FALSE(body["error"].get<std::string>().empty());
  }

  EXPECT_TRUE(server_->alive());
  const auto health = client.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  const json ok = segment(client, id, {{"points", {{1, 1, 1}}}});
  EXPECT_EQ(ok["masks"].size(), 1u);
}

TEST_F(ServeApiHttp, DeleteForgetsTheImage) {
  auto client = server_->client();
  const std::string id = upload_chelsea(client)["id"];
  const auto deleted = client.Delete("/v1/images/" + id);
  ASSERT_TRUE(deleted);
  EXPECT_EQ(deleted->status, 200);
  const json gone = segment(client, id, {{"points", {{1, 1, 1}}}}, 404);
  EXPECT_NE(gone["error"].get<std::string>().find("unknown image id"), std::string::npos);
  const auto again = client.Delete("/v1/images/" + id);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 404);
}

TEST(ServeApiProcess, EvictsTheOldestImagesWhenTheCacheIsFullAndStopsCleanlyOnSigterm) {
  // An image costs its decoder features plus its decoded photo (kept for everything).
  const int64_t entry = ImageCache::charge(*predictor_with_features(288, 112)) + 288 * 112 * 3;
  const size_t fit = static_cast<size_t>((1024 * 1024) / entry);
  ASSERT_GE(fit, 1u);
  ASSERT_LE(fit, 32u) << "the micro model's features should fill 1 MB quickly";
  ServerProcess server({"--cache-mb", "1"});
  ASSERT_GT(server.port(), 0) << server.url();
  auto client = server.client();
  const std::string png = read_bytes(chelsea_path());
  std::vector<std::string> ids;
  for (size_t i = 0; i < fit + 2; ++i) {
    const auto res = client.Post("/v1/images", png, "image/png");
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 201) << res->body;
    ids.push_back(json::parse(res->body)["id"]);
  }
  const std::string body = R"({"points": [[10, 10, 1]]})";
  for (size_t i = 0; i < ids.size(); ++i) {
    const auto res = client.Post("/v1/images/" + ids[i] + "/segment", body, "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, i < 2 ? 404 : 200) << "image " << i << " of " << ids.size();
  }
  const json health = json::parse(client.Get("/healthz")->body);
  EXPECT_EQ(health["images"].get<size_t>(), fit);
  EXPECT_EQ(health["cache_bytes"].get<int64_t>(), static_cast<int64_t>(fit) * entry);
  EXPECT_EQ(health["cache_budget_bytes"].get<int64_t>(), 1024 * 1024);
  EXPECT_EQ(server.stop(), 0);
}

// --precision bf16 applies to every upload: the answers are those of an
// in-process bf16 encode (which differ from fp32 ones), and /healthz says so.
TEST(ServeApiProcess, Bf16PrecisionAppliesToEveryUpload) {
  if (!bf16_matmul_supported()) GTEST_SKIP() << "oneDNN cannot run bfloat16 on this CPU";
  ServerProcess server({"--precision", "bf16"});
  ASSERT_GT(server.port(), 0) << server.url();
  auto client = server.client();
  EXPECT_EQ(json::parse(client.Get("/healthz")->body)["precision"], "bf16");
  const auto upload = client.Post("/v1/images", read_bytes(chelsea_path()), "image/png");
  ASSERT_TRUE(upload);
  ASSERT_EQ(upload->status, 201) << upload->body;
  const std::string id = json::parse(upload->body)["id"];
  const auto res = client.Post("/v1/images/" + id + "/segment", R"({"points": [[100, 50, 1]]})", "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;

  const RgbImage image = decode_image_file(chelsea_path());
  const Prompt prompt{{{100, 50, 1}}, std::nullopt, {}};
  Predictor bf16(micro_model()), fp32(micro_model());
  bf16.set_image(image, {.precision = Precision::bf16});
  fp32.set_image(image);
  const float bf16_score = bf16.predict(prompt, false).object_score_logit;
  EXPECT_FLOAT_EQ(json::parse(res->body)["object_score_logit"].get<float>(), bf16_score);
  EXPECT_NE(bf16_score, fp32.predict(prompt, false).object_score_logit);
  EXPECT_EQ(server.stop(), 0);
}

TEST(ServeApiProcess, RefusesAPortInUse) {
  ServerProcess first;
  ASSERT_GT(first.port(), 0);
  ServerProcess second({}, first.port());
  EXPECT_EQ(second.port(), 0);
  EXPECT_EQ(second.stop(), 1);
}

}  // namespace
}  // namespace sam2rt
