#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "api/binary_mask.h"
#include "api/cutout.h"
#include "api/mask_polygons.h"
#include "api/feature_file.h"
#include "api/masks_overlay.h"
#include "api/object_prompts.h"
#include "api/overlay.h"
#include "api/predictor.h"
#include "api/prompt_text.h"
#include "commands.h"
#include "core/error.h"
#include "io/atomic_file.h"
#include "io/mask_rle.h"
#include "io/png_writer.h"
#include "io/printable_text.h"
#include "io/safetensors.h"
#include "image_output.h"
#include "mask_input_file.h"
#include "model_options.h"
#include "object_file_names.h"
#include "photo_input.h"
#include "staged_outputs.h"

namespace sam2rt::cli {

namespace {

// A prompts file is a short list of clicks and boxes; anything near this size is a wrong file.
constexpr std::uintmax_t kMaxPromptsFileBytes = 16u << 20;

std::string read_prompts_text(const std::string& path) {
  std::error_code error;
  const std::uintmax_t size = std::filesystem::file_size(path, error);
  if (error) throw Error("--prompts '" + path + "': cannot read it: " + error.message());
  if (size > kMaxPromptsFileBytes) {
    throw Error("--prompts '" + path + "': " + std::to_string(size) + " bytes; a prompts file is at most " +
                std::to_string(kMaxPromptsFileBytes >> 20) + " MiB");
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) throw Error("--prompts '" + path + "': cannot read it");
  return text.str();
}

// A cut-out keeps the photo's colours and needs transparency: PNG only.
void require_png_name(const std::string& path, const std::string& flag) {
  std::string extension = std::filesystem::path(path).extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (extension != ".png") {
    throw Error(flag + " '" + path + "': a cut-out is written as RGBA PNG (JPEG has no transparency); name it .png");
  }
}

nlohmann::json mask_summary(const std::vector<uint8_t>& mask, int width, int height, float iou, int token,
                            bool with_rle) {
  const MaskExtent extent = mask_extent(mask, width, height);
  nlohmann::json summary = {{"iou", iou}, {"area", extent.area}, {"bbox", extent.bbox}, {"token", token}};
  if (with_rle) {
    const UncompressedRle rle = encode_rle(mask.data(), height, width);
    summary["segmentation"] = {{"size", {rle.height, rle.width}}, {"counts", coco_rle_string(rle)}};
  }
  return summary;
}

// One object of the run: its prompt, where its errors point, and its own output files.
struct SegmentObject {
  std::string name;
  std::string origin;  // starts its errors in a run of several objects ("--prompts 'p.json': object 1")
  Prompt prompt;
  std::string mask_input_path;
  std::string out_path;
  AtomicFile* mask_file = nullptr;
  AtomicFile* cutout_file = nullptr;
  AtomicFile* polygons_file = nullptr;
  AtomicFile* logits_file = nullptr;
};

// What a decoded object contributes to the run's reports.
struct ObjectResult {
  int64_t best = 0;
  size_t candidates = 0;
  float best_iou = 0;
  int64_t best_area = 0;
  std::vector<uint8_t> best_mask;
  nlohmann::json report;  // best_index, object_score_logit, masks
};

struct SegmentCommand {
  ModelOptions model;
  std::string image_path;
  std::string features_path;
  bool force_features = false;
  std::vector<std::string> points;
  std::vector<std::string> boxes;
  std::string mask_input_path;
  std::string prompts_path;
  bool multimask = false;
  double max_hole_area = 0;
  double max_sprinkle_area = 0;
  std::string out_path;
  std::string overlay_path;
  std::string json_path;
  std::string logits_path;
  std::string cutout_path;
  std::string polygons_path;
  double polygon_tolerance = 1.0;
  bool rle = false;

  // Several objects (a prompts file, or more than one box) number their per-object
  // outputs and report a list of objects; one object keeps the single-object outputs.
  bool several_objects() const { return !prompts_path.empty() || boxes.size() > 1; }

  std::vector<SegmentObject> gather_objects() const {
    std::vector<SegmentObject> objects;
    if (!prompts_path.empty()) {
      const std::string origin = "--prompts '" + prompts_path + "'";
      const std::filesystem::path folder = std::filesystem::path(prompts_path).parent_path();
      for (ObjectPrompt& parsed : parse_object_prompts(read_prompts_text(prompts_path), origin)) {
        SegmentObject object;
        object.origin = origin + ": object " + std::to_string(objects.size());
        object.name = std::move(parsed.name);
        object.prompt = std::move(parsed.prompt);
        // Like an include in a config file: relative to the prompts file.
        if (!parsed.mask_input_path.empty()) object.mask_input_path = (folder / parsed.mask_input_path).string();
        objects.push_back(std::move(object));
      }
      return objects;
    }
    if (boxes.size() > 1) {
      if (!points.empty() || !mask_input_path.empty()) {
        throw Error("several --box make one object each and cannot share --point or --mask-input; give each "
                    "object's points, box and mask input in --prompts FILE.json");
      }
      for (const std::string& box : boxes) {
        SegmentObject object;
        object.origin = "object " + std::to_string(objects.size()) + " (--box " + box + ")";
        object.prompt.box = parse_box(box);
        objects.push_back(std::move(object));
      }
      return objects;
    }
    SegmentObject object;
    for (const std::string& p : points) object.prompt.points.push_back(parse_point(p));
    if (!boxes.empty()) object.prompt.box = parse_box(boxes.front());
    object.mask_input_path = mask_input_path;
    objects.push_back(std::move(object));
    return objects;
  }

  // An error about one object names it when the run has several.
  template <typename Step>
  void for_object(const SegmentObject& object, Step step) const {
    if (!several_objects()) return step();
    try {
      step();
    } catch (const Error& e) {
      throw Error(object.origin + ": " + e.what());
    }
  }

  ObjectResult segment_object(const Predictor& predictor, const SegmentObject& object, const RgbImage& image,
                      const ModelConfig& config) const {
    const MaskPrediction result = predictor.predict(object.prompt, multimask);
    const auto& ious = result.iou_predictions;
    ObjectResult out;
    out.best = std::max_element(ious.begin(), ious.end()) - ious.begin();
    out.best_iou = ious[static_cast<size_t>(out.best)];
    out.candidates = ious.size();
    out.best_mask = threshold_mask(result.masks, out.best, config.mask_threshold);
    if (object.mask_file) {
      const std::vector<uint8_t> mask_png = encode_png_gray8(out.best_mask.data(), image.width, image.height);
      object.mask_file->write(mask_png.data(), mask_png.size());
    }
    if (object.cutout_file) {
      for_object(object, [&] {
        const Cutout cutout = cut_out(image, out.best_mask);
        const std::vector<uint8_t> png = encode_png_rgba8(cutout.rgba.data(), cutout.width, cutout.height);
        object.cutout_file->write(png.data(), png.size());
      });
    }
    if (object.polygons_file) {
      const nlohmann::json polygons = {
          {"width", image.width},
          {"height", image.height},
          {"tolerance", polygon_tolerance},
          {"polygons", polygons_json(mask_polygons(out.best_mask, image.width, image.height, polygon_tolerance))}};
      const std::string text = polygons.dump() + "\n";
      object.polygons_file->write(text.data(), text.size());
    }
    if (object.logits_file) {
      Tensor iou_tensor({static_cast<int64_t>(ious.size())});
      std::copy(ious.begin(), ious.end(), iou_tensor.data());
      write_safetensors(*object.logits_file,
                        {{"masks", result.masks},
                         {"low_res_masks", result.low_res_masks},
                         {"iou_predictions", iou_tensor},
                         {"object_score_logits", Tensor::filled({1, 1}, result.object_score_logit)}},
                        {{"format", "sam2rt.logits.v1"}, {"image", image_path}});
    }
    out.report = {{"best_index", out.best},
                  {"object_score_logit", result.object_score_logit},
                  {"masks", nlohmann::json::array()}};
    for (size_t i = 0; i < ious.size(); ++i) {
      const auto mask = static_cast<int64_t>(i) == out.best
                            ? out.best_mask
                            : threshold_mask(result.masks, static_cast<int64_t>(i), config.mask_threshold);
      out.report["masks"].push_back(
          mask_summary(mask, image.width, image.height, ious[i], result.token_indices[i], rle));
    }
    out.best_area = out.report["masks"][static_cast<size_t>(out.best)]["area"].get<int64_t>();
    return out;
  }

  void run() const {
    const auto process_start = std::chrono::steady_clock::now();
    std::vector<SegmentObject> objects = gather_objects();
    const bool several = several_objects();
    StagedOutputs outputs;
    for (size_t i = 0; i < objects.size(); ++i) {
      auto per_object = [&](const std::string& path) { return several ? object_file_name(path, i) : path; };
      SegmentObject& object = objects[i];
      if (!out_path.empty()) object.out_path = per_object(out_path);
      object.mask_file = outputs.add(object.out_path, "--out");
      if (!cutout_path.empty()) object.cutout_file = outputs.add(per_object(cutout_path), "--cutout");
      if (!polygons_path.empty()) object.polygons_file = outputs.add(per_object(polygons_path), "--polygons");
      if (!logits_path.empty()) object.logits_file = outputs.add(per_object(logits_path), "--logits");
    }
    AtomicFile* overlay_file = outputs.add(overlay_path, "--overlay");
    const bool json_to_stdout = json_path == "-";
    AtomicFile* json_file = outputs.add(json_to_stdout ? "" : json_path, "--json");
    if (out_path.empty() && json_path.empty()) {
      throw Error("nothing to write: give --out FILE.png for the mask, --json FILE (or --json - for stdout), or both");
    }
    // Names asking for another format are refused before any work.
    if (!out_path.empty()) image_format_for(out_path, "--out", false);
    const ImageFormat overlay_format =
        overlay_path.empty() ? ImageFormat::png : image_format_for(overlay_path, "--overlay", true);
    if (!cutout_path.empty()) require_png_name(cutout_path, "--cutout");

    auto loaded = model.load();
    const ModelConfig& config = loaded->config();
    for (SegmentObject& object : objects) {
      if (object.mask_input_path.empty()) continue;
      const std::string origin = several ? object.origin + ", \"mask_input\" '" + printable(object.mask_input_path) + "'"
                                         : "--mask-input '" + object.mask_input_path + "'";
      object.prompt.mask_input = read_mask_input(object.mask_input_path, config.low_res_mask_size(), origin);
    }

    Predictor predictor(loaded, MaskFill{config.mask_threshold, max_hole_area, max_sprinkle_area});
    const RgbImage image = read_photo(image_path, model.max_image_pixels);
    // Refuse a bad prompt now rather than after the image encoder has run.
    for (const SegmentObject& object : objects) {
      for_object(object, [&] { validate_prompt(object.prompt, image.width, image.height, config); });
    }
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

    // One object at a time: only the best masks (as RLE, for the overlay) outlive it.
    const auto decode_start = std::chrono::steady_clock::now();
    std::vector<ObjectResult> results;
    std::vector<UncompressedRle> best_masks;
    for (size_t i = 0; i < objects.size(); ++i) {
      results.push_back(segment_object(predictor, objects[i], image, config));
      ObjectResult& result = results.back();
      if (overlay_file && several) best_masks.push_back(encode_rle(result.best_mask.data(), image.height, image.width));
      if (several) result.best_mask = {};
    }
    const double decode_ms = milliseconds_since(decode_start);

    if (overlay_file) {
      RgbImage overlay;
      if (several) {
        overlay = render_masks_overlay(image, best_masks);
        for (const SegmentObject& object : objects) draw_prompt_markers(overlay, object.prompt);
      } else {
        overlay = render_overlay(image, results.front().best_mask, objects.front().prompt);
      }
      const std::vector<uint8_t> bytes = encode_rgb8(overlay_format, overlay.pixels.data(), overlay.width, overlay.height);
      overlay_file->write(bytes.data(), bytes.size());
    }
    nlohmann::json report = {{"image", image_path},
                             {"width", image.width},
                             {"height", image.height},
                             {"model", model.source().describe(config)},
                             {"multimask", multimask}};
    if (several) {
      report["objects"] = nlohmann::json::array();
      for (size_t i = 0; i < objects.size(); ++i) {
        nlohmann::json entry = results[i].report;
        entry["index"] = i;
        if (!objects[i].name.empty()) entry["name"] = objects[i].name;
        if (!objects[i].out_path.empty()) entry["out"] = objects[i].out_path;
        report["objects"].push_back(std::move(entry));
      }
    } else {
      report.update(results.front().report);
    }
    report["timing_ms"] = {{"encode", encode_ms}, {"decode", decode_ms}, {"total", milliseconds_since(process_start)}};
    const std::string json = report.dump(2) + "\n";
    if (json_file) json_file->write(json.data(), json.size());
    outputs.commit_all();
    if (json_to_stdout) std::fputs(json.c_str(), stdout);
    // With the JSON on stdout, the human summary goes to stderr.
    std::FILE* summary = json_to_stdout ? stderr : stdout;
    for (size_t i = 0; i < objects.size(); ++i) {
      const ObjectResult& r = results[i];
      const std::string destination = objects[i].out_path.empty() ? "" : " -> " + objects[i].out_path;
      std::fprintf(summary, "%smask %lld of %zu: predicted IoU %.3f, area %lld px%s%s",
                   several ? ("object " + std::to_string(i) + ": ").c_str() : "", static_cast<long long>(r.best),
                   r.candidates, r.best_iou, static_cast<long long>(r.best_area), destination.c_str(),
                   several ? "\n" : "");
    }
    if (several) std::fprintf(summary, "%zu objects", objects.size());
    std::fprintf(summary, " (encode %.0f ms, decode %.1f ms)\n", encode_ms, decode_ms);
  }
};

}  // namespace

void register_segment(CLI::App& app) {
  auto command = std::make_shared<SegmentCommand>();
  CLI::App* sub = app.add_subcommand(
      "segment",
      "Segment objects from clicks, boxes or earlier masks.\n"
      "Segment objects from clicks and/or boxes: encodes the photo (or reuses --features from `sam2rt "
      "encode`) and writes each object's best mask as a PNG at the photo's size. Coordinates are pixels of the "
      "original photo.\n"
      "One object: --point, --box and --mask-input together prompt it. Several objects: repeat --box (each box "
      "one object, as the official predictor takes a B x 4 box array) or give --prompts FILE.json. With several "
      "objects, object I's --out, --cutout, --polygons and --logits go to NAME_I.EXT (--out mask.png: mask_0.png, "
      "mask_1.png, ...), the --json report lists them under \"objects\" and the --overlay shows every object "
      "in its own colour with its prompts.\n"
      "--prompts FILE.json: a list with one entry per object, each with any of\n"
      "  \"points\": [[X, Y], [X, Y, LABEL], ...] (LABEL 1 = object, the default; 0 = background),\n"
      "  \"box\": [X0, Y0, X1, Y1], \"mask_input\": \"file.safetensors\" (as --mask-input, relative to "
      "FILE.json's folder),\n"
      "  \"name\": \"cat\" (carried into the reports). At most 256 objects; e.g.\n"
      "  [{\"name\": \"cat\", \"points\": [[110, 41]]}, {\"box\": [80, 15, 140, 65], \"points\": [[100, 40, 0]]}]");
  command->model.add_to(*sub);
  command->model.add_device_to(*sub);
  sub->add_option("--image", command->image_path, "input photo (PNG or JPEG)")->required()->check(CLI::ExistingFile);
  sub->add_option("--features", command->features_path,
                  "reuse features written by `sam2rt encode` (encoded at that run's --precision); refused when they "
                  "record another model")
      ->check(CLI::ExistingFile)
      ->excludes("--precision");
  sub->add_flag("--force-features", command->force_features,
                "use --features even when their record names another model, config or preprocessing (or none)")
      ->needs("--features");
  CLI::Option* point = sub->add_option("--point", command->points,
                                       "click X,Y[,LABEL]; LABEL 1 = object (default), 0 = background. Several "
                                       "clicks on the object: repeat --point or list them after it (--point "
                                       "390,440 200,100,0)")
                           ->type_name("X,Y[,L]")
                           ->allow_extra_args(true);
  CLI::Option* box = sub->add_option("--box", command->boxes,
                                     "box X0,Y0,X1,Y1; several boxes (repeated or listed) are several objects, "
                                     "one mask each")
                         ->type_name("X0,Y0,X1,Y1")
                         ->allow_extra_args(true);
  CLI::Option* mask_input = sub->add_option("--mask-input", command->mask_input_path,
                                            "low-res mask prompt: a --logits file of an earlier run, or one "
                                            "[1,256,256] tensor")
                                ->check(CLI::ExistingFile);
  sub->add_option("--prompts", command->prompts_path,
                  "JSON list of objects, each with points, box and/or mask_input (the format is above)")
      ->check(CLI::ExistingFile)
      ->excludes(point)
      ->excludes(box)
      ->excludes(mask_input);
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
  sub->add_option("--out", command->out_path,
                  "mask PNG (.png), 8-bit, 255 = object; may be left out when --json is given (e.g. --json - --rle)");
  sub->add_option("--overlay", command->overlay_path,
                  "the photo with the masks (several objects: each in its own colour) and the prompts drawn on it: "
                  ".png, or .jpg/.jpeg (JPEG quality 90)");
  CLI::Option* json = sub->add_option(
      "--json", command->json_path,
      "JSON with every mask's predicted IoU, area, bbox and the object score; - writes it to stdout");
  sub->add_option("--logits", command->logits_path,
                  ".safetensors with masks, low_res_masks, iou_predictions, object_score_logits");
  sub->add_option("--cutout", command->cutout_path,
                  "RGBA PNG of the object cut out of the photo: the best mask's bounding box, transparent outside "
                  "the mask (an empty mask is an error)");
  sub->add_option("--polygons", command->polygons_path,
                  "JSON with the best mask's outlines as polygons in pixel coordinates: {\"polygons\": [{\"exterior\": "
                  "[[x, y], ...], \"holes\": [[[x, y], ...], ...]}, ...]}, one entry per 8-connected part (OpenCV "
                  "findContours, simplified by Douglas-Peucker with --polygon-tolerance)");
  sub->add_option("--polygon-tolerance", command->polygon_tolerance,
                  "largest distance in pixels a simplified outline may stray from the mask's boundary pixels (0 keeps "
                  "every boundary pixel)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str()
      ->type_name("PX");
  sub->add_flag("--rle", command->rle,
                "add \"segmentation\": {\"size\": [h, w], \"counts\": \"...\"} (COCO compressed RLE, what "
                "pycocotools.mask.encode gives) to every mask in --json")
      ->needs(json);
  sub->callback([command] { command->run(); });
}

}  // namespace sam2rt::cli
