#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

#include "api/binary_mask.h"
#include "api/feature_file.h"
#include "api/overlay.h"
#include "api/predictor.h"
#include "api/prompt_text.h"
#include "commands.h"
#include "core/error.h"
#include "io/atomic_file.h"
#include "io/png_writer.h"
#include "io/safetensors.h"
#include "model_options.h"
#include "staged_outputs.h"

namespace sam2rt::cli {

namespace {

// A --mask-input file: either a --logits file of an earlier run (its best
// low_res_masks entry, as the SAM notebooks feed it back) or a single [1, L, L] tensor.
Tensor read_mask_input(const std::string& path, int64_t low_res) {
  const SafetensorsFile file = read_safetensors(path);
  const Shape expected = {1, low_res, low_res};
  auto low = file.tensors.find("low_res_masks");
  auto iou = file.tensors.find("iou_predictions");
  if (low != file.tensors.end() && iou != file.tensors.end()) {
    const Tensor& masks = low->second;
    if (masks.rank() != 3 || masks.dim(1) != low_res || masks.dim(2) != low_res ||
        iou->second.numel() != masks.dim(0) || masks.dim(0) == 0) {
      throw Error("--mask-input '" + path + "': low_res_masks " + shape_to_string(masks.shape()) +
                  " does not match this model's " + shape_to_string({-1, low_res, low_res}));
    }
    const float* scores = iou->second.data();
    const int64_t best = std::max_element(scores, scores + masks.dim(0)) - scores;
    Tensor chosen(expected);
    std::copy(masks.data() + best * low_res * low_res, masks.data() + (best + 1) * low_res * low_res, chosen.data());
    return chosen;
  }
  if (file.tensors.size() != 1) {
    throw Error("--mask-input '" + path + "': expected a --logits file (low_res_masks + iou_predictions) or a "
                "file holding one " + shape_to_string(expected) + " tensor");
  }
  const Tensor& t = file.tensors.begin()->second;
  if (t.shape() != expected) {
    throw Error("--mask-input '" + path + "': tensor has shape " + shape_to_string(t.shape()) + ", expected " +
                shape_to_string(expected));
  }
  return t.clone();
}

nlohmann::json mask_summary(const std::vector<uint8_t>& mask, int width, int height, float iou, int token) {
  const MaskExtent extent = mask_extent(mask, width, height);
  return {{"iou", iou}, {"area", extent.area}, {"bbox", extent.bbox}, {"token", token}};
}

struct SegmentCommand {
  ModelOptions model;
  std::string image_path;
  std::string features_path;
  std::vector<std::string> points;
  std::string box;
  std::string mask_input_path;
  bool multimask = false;
  std::string out_path;
  std::string overlay_path;
  std::string json_path;
  std::string logits_path;

  void run() const {
    const auto process_start = std::chrono::steady_clock::now();
    StagedOutputs outputs;
    AtomicFile* mask_file = outputs.add(out_path, "--out");
    AtomicFile* overlay_file = outputs.add(overlay_path, "--overlay");
    AtomicFile* json_file = outputs.add(json_path, "--json");
    AtomicFile* logits_file = outputs.add(logits_path, "--logits");
    Prompt prompt;
    for (const std::string& p : points) prompt.points.push_back(parse_point(p));
    if (!box.empty()) prompt.box = parse_box(box);

    auto loaded = model.load();
    const ModelConfig& config = loaded->config();
    if (!mask_input_path.empty()) prompt.mask_input = read_mask_input(mask_input_path, config.low_res_mask_size());

    Predictor predictor(loaded);
    const RgbImage image = decode_image_file(image_path, model.max_image_pixels);
    // Refuse a bad prompt now rather than after the image encoder has run.
    validate_prompt(prompt, image.width, image.height, config);
    double encode_ms = 0.0;
    if (!features_path.empty()) {
      FeatureFile features = read_feature_file(features_path);
      if (features.image_size != config.image_size) {
        throw Error("--features '" + features_path + "' was encoded at image_size " +
                    std::to_string(features.image_size) + " but the model uses " + std::to_string(config.image_size));
      }
      if (features.orig_width != image.width || features.orig_height != image.height) {
        throw Error("--features '" + features_path + "' belongs to a " + std::to_string(features.orig_width) + "x" +
                    std::to_string(features.orig_height) + " image, but --image is " + std::to_string(image.width) +
                    "x" + std::to_string(image.height));
      }
      predictor.set_features(std::move(features.features), image.width, image.height);
    } else {
      const auto start = std::chrono::steady_clock::now();
      predictor.set_image(image, EncodeOptions{.precision = model.encoder_precision()});
      encode_ms = milliseconds_since(start);
    }
    const auto decode_start = std::chrono::steady_clock::now();
    const MaskPrediction result = predictor.predict(prompt, multimask);
    const double decode_ms = milliseconds_since(decode_start);

    const auto& ious = result.iou_predictions;
    const int64_t best = std::max_element(ious.begin(), ious.end()) - ious.begin();
    const std::vector<uint8_t> best_mask = threshold_mask(result.masks, best, config.mask_threshold);
    const std::vector<uint8_t> mask_png = encode_png_gray8(best_mask.data(), image.width, image.height);
    mask_file->write(mask_png.data(), mask_png.size());
    if (overlay_file) {
      const RgbImage overlay = render_overlay(image, best_mask, prompt);
      const std::vector<uint8_t> png = encode_png_rgb8(overlay.pixels.data(), overlay.width, overlay.height);
      overlay_file->write(png.data(), png.size());
    }
    if (logits_file) {
      Tensor iou_tensor({static_cast<int64_t>(ious.size())});
      std::copy(ious.begin(), ious.end(), iou_tensor.data());
      write_safetensors(*logits_file,
                        {{"masks", result.masks},
                         {"low_res_masks", result.low_res_masks},
                         {"iou_predictions", iou_tensor},
                         {"object_score_logits", Tensor::filled({1, 1}, result.object_score_logit)}},
                        {{"format", "sam2rt.logits.v1"}, {"image", image_path}});
    }
    nlohmann::json report = {{"image", image_path},
                             {"width", image.width},
                             {"height", image.height},
                             {"model", model.source().describe()},
                             {"multimask", multimask},
                             {"best_index", best},
                             {"object_score_logit", result.object_score_logit},
                             {"masks", nlohmann::json::array()}};
    for (size_t i = 0; i < ious.size(); ++i) {
      const auto mask = static_cast<int64_t>(i) == best ? best_mask
                                                          : threshold_mask(result.masks, static_cast<int64_t>(i),
                                                                           config.mask_threshold);
      report["masks"].push_back(mask_summary(mask, image.width, image.height, ious[i], result.token_indices[i]));
    }
    report["timing_ms"] = {{"encode", encode_ms}, {"decode", decode_ms}, {"total", milliseconds_since(process_start)}};
    if (json_file) {
      const std::string json = report.dump(2) + "\n";
      json_file->write(json.data(), json.size());
    }
    outputs.commit_all();
    std::printf("mask %lld of %zu: predicted IoU %.3f, area %lld px -> %s (encode %.0f ms, decode %.1f ms)\n",
                static_cast<long long>(best), ious.size(), ious[static_cast<size_t>(best)],
                report["masks"][static_cast<size_t>(best)]["area"].get<long long>(), out_path.c_str(), encode_ms,
                decode_ms);
  }
};

}  // namespace

void register_segment(CLI::App& app) {
  auto command = std::make_shared<SegmentCommand>();
  CLI::App* sub = app.add_subcommand(
      "segment",
      "Segment an object from clicks and/or a box: encodes the photo (or reuses --features from `sam2rt encode "
      "--decoder-ready`) and writes the best mask as a PNG at the photo's size. Coordinates are pixels of the "
      "original photo.");
  command->model.add_to(*sub);
  sub->add_option("--image", command->image_path, "input photo (PNG or JPEG)")->required()->check(CLI::ExistingFile);
  sub->add_option("--features", command->features_path,
                  "reuse features written by `sam2rt encode --decoder-ready` (encoded at that run's --precision)")
      ->check(CLI::ExistingFile)
      ->excludes("--precision");
  sub->add_option("--point", command->points, "click X,Y[,LABEL]; LABEL 1 = object (default), 0 = background")
      ->type_name("X,Y[,L]")
      ->allow_extra_args(false);
  sub->add_option("--box", command->box, "box X0,Y0,X1,Y1")->type_name("X0,Y0,X1,Y1");
  sub->add_option("--mask-input", command->mask_input_path,
                  "low-res mask prompt: a --logits file of an earlier run, or one [1,256,256] tensor")
      ->check(CLI::ExistingFile);
  sub->add_flag("--multimask", command->multimask, "return 3 candidate masks (the best is written to --out)");
  sub->add_option("--out", command->out_path, "mask PNG, 8-bit, 255 = object")->required();
  sub->add_option("--overlay", command->overlay_path, "PNG of the photo with the mask and prompts drawn on it");
  sub->add_option("--json", command->json_path, "JSON with every mask's predicted IoU, area, bbox and the object score");
  sub->add_option("--logits", command->logits_path,
                  ".safetensors with masks, low_res_masks, iou_predictions, object_score_logits");
  sub->callback([command] { command->run(); });
}

}  // namespace sam2rt::cli
