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
#include "image_output.h"
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
  bool force_features = false;
  std::vector<std::string> points;
  std::string box;
  std::string mask_input_path;
  bool multimask = false;
  double max_hole_area = 0;
  double max_sprinkle_area = 0;
  std::string out_path;
  std::string overlay_path;
  std::string json_path;
  std::string logits_path;

  void run() const {
    const auto process_start = std::chrono::steady_clock::now();
    StagedOutputs outputs;
    AtomicFile* mask_file = outputs.add(out_path, "--out");
    AtomicFile* overlay_file = outputs.add(overlay_path, "--overlay");
    const bool json_to_stdout = json_path == "-";
    AtomicFile* json_file = outputs.add(json_to_stdout ? "" : json_path, "--json");
    AtomicFile* logits_file = outputs.add(logits_path, "--logits");
    image_format_for(out_path, "--out", false);  // refuses a name asking for another format, before any work
    const ImageFormat overlay_format =
        overlay_path.empty() ? ImageFormat::png : image_format_for(overlay_path, "--overlay", true);
    Prompt prompt;
    for (const std::string& p : points) prompt.points.push_back(parse_point(p));
    if (!box.empty()) prompt.box = parse_box(box);

    auto loaded = model.load();
    const ModelConfig& config = loaded->config();
    if (!mask_input_path.empty()) prompt.mask_input = read_mask_input(mask_input_path, config.low_res_mask_size());

    Predictor predictor(loaded, MaskFill{config.mask_threshold, max_hole_area, max_sprinkle_area});
    const RgbImage image = decode_image_file(image_path, model.max_image_pixels);
    // Refuse a bad prompt now rather than after the image encoder has run.
    validate_prompt(prompt, image.width, image.height, config);
    double encode_ms = 0.0;
    if (!features_path.empty()) {
      FeatureFile features = read_feature_file(features_path);
      if (features.orig_width != image.width || features.orig_height != image.height) {
        throw Error("--features '" + features_path + "' belongs to a " + std::to_string(features.orig_width) + "x" +
                    std::to_string(features.orig_height) + " image, but --image is " + std::to_string(image.width) +
                    "x" + std::to_string(image.height));
      }
      predictor.set_features(std::move(features), force_features);
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
      const std::vector<uint8_t> bytes = encode_rgb8(overlay_format, overlay.pixels.data(), overlay.width, overlay.height);
      overlay_file->write(bytes.data(), bytes.size());
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
                             {"model", model.source().describe(config)},
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
    const std::string json = report.dump(2) + "\n";
    if (json_file) json_file->write(json.data(), json.size());
    outputs.commit_all();
    if (json_to_stdout) std::fputs(json.c_str(), stdout);
    // With the JSON on stdout, the human summary goes to stderr.
    std::fprintf(json_to_stdout ? stderr : stdout, "mask %lld of %zu: predicted IoU %.3f, area %lld px -> %s (encode %.0f ms, decode %.1f ms)\n",
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
      "Segment an object from clicks and/or a box: encodes the photo (or reuses --features from `sam2rt "
      "encode`) and writes the best mask as a PNG at the photo's size. Coordinates are pixels of the "
      "original photo.");
  command->model.add_to(*sub);
  sub->add_option("--image", command->image_path, "input photo (PNG or JPEG)")->required()->check(CLI::ExistingFile);
  sub->add_option("--features", command->features_path,
                  "reuse features written by `sam2rt encode` (encoded at that run's --precision); refused when they "
                  "record another model")
      ->check(CLI::ExistingFile)
      ->excludes("--precision");
  sub->add_flag("--force-features", command->force_features,
                "use --features even when their record names another model, config or preprocessing (or none)")
      ->needs("--features");
  sub->add_option("--point", command->points,
                  "click X,Y[,LABEL]; LABEL 1 = object (default), 0 = background. Several clicks on the object: "
                  "repeat --point or list them after it (--point 390,440 200,100,0)")
      ->type_name("X,Y[,L]")
      ->allow_extra_args(true);
  sub->add_option("--box", command->box, "box X0,Y0,X1,Y1")->type_name("X0,Y0,X1,Y1");
  sub->add_option("--mask-input", command->mask_input_path,
                  "low-res mask prompt: a --logits file of an earlier run, or one [1,256,256] tensor")
      ->check(CLI::ExistingFile);
  sub->add_flag("--multimask", command->multimask, "return 3 candidate masks (the best is written to --out)");
  sub->add_option("--max-hole-area", command->max_hole_area,
                  "fill holes (8-connected background regions) of at most this area, in pixels of the low-res "
                  "mask (256x256 for image_size 1024), as SAM2ImagePredictor's max_hole_area; 0 = off")
      ->check(CLI::NonNegativeNumber)
      ->type_name("AREA");
  sub->add_option("--max-sprinkle-area", command->max_sprinkle_area,
                  "remove specks (8-connected object regions) of at most this low-res area, as "
                  "SAM2ImagePredictor's max_sprinkle_area; 0 = off")
      ->check(CLI::NonNegativeNumber)
      ->type_name("AREA");
  sub->add_option("--out", command->out_path, "mask PNG (.png), 8-bit, 255 = object")->required();
  sub->add_option("--overlay", command->overlay_path,
                  "the photo with the mask and prompts drawn on it: .png, or .jpg/.jpeg (JPEG quality 90)");
  sub->add_option("--json", command->json_path,
                  "JSON with every mask's predicted IoU, area, bbox and the object score; - writes it to stdout");
  sub->add_option("--logits", command->logits_path,
                  ".safetensors with masks, low_res_masks, iou_predictions, object_score_logits");
  sub->callback([command] { command->run(); });
}

}  // namespace sam2rt::cli
