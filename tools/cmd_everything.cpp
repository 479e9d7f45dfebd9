#include <unistd.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include "api/amg_json.h"
#include "api/automatic_mask_generator.h"
#include "api/coco_dataset.h"
#include "api/masks_overlay.h"
#include "batch_job.h"
#include "commands.h"
#include "core/error.h"
#include "io/atomic_file.h"
#include "io/png_writer.h"
#include "kernels/stage_profile.h"
#include "model_options.h"
#include "photo_input.h"
#include "staged_outputs.h"

namespace sam2rt::cli {

namespace {

// --point-grids FILE: a JSON list of grids, one per crop layer, each a list of [x, y] in [0, 1].
std::vector<std::vector<std::array<double, 2>>> read_point_grids(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("--point-grids '" + path + "': cannot open the file");
  nlohmann::json j;
  try {
    in >> j;
    return j.get<std::vector<std::vector<std::array<double, 2>>>>();
  } catch (const nlohmann::json::exception&) {
    throw Error("--point-grids '" + path + "': expected JSON like [[[x, y], ...], ...] (one list of points per "
                "crop layer, coordinates in [0, 1])");
  }
}

// Progress on stderr: a line redrawn in place on a terminal, a line per quarter otherwise.
class ProgressLine {
 public:
  ProgressLine() : terminal_(isatty(STDERR_FILENO) != 0), start_(std::chrono::steady_clock::now()) {}

  void update(int64_t done, int64_t total) {
    const double seconds = milliseconds_since(start_) / 1000.0;
    const int quarter = static_cast<int>(4 * done / std::max<int64_t>(total, 1));
    if (!terminal_ && quarter == last_quarter_) return;
    last_quarter_ = quarter;
    std::fprintf(stderr, "%severything: %lld/%lld points (%.0f%%), %.1f s%s", terminal_ ? "\r" : "",
                 static_cast<long long>(done), static_cast<long long>(total),
                 100.0 * static_cast<double>(done) / static_cast<double>(std::max<int64_t>(total, 1)), seconds,
                 terminal_ ? "" : "\n");
    if (terminal_ && done == total) std::fputc('\n', stderr);
    std::fflush(stderr);
  }

 private:
  bool terminal_;
  std::chrono::steady_clock::time_point start_;
  int last_quarter_ = 0;
};

struct EverythingCommand {
  ModelOptions model;
  BatchOptions batch;
  std::string coco_path;
  std::string image_path;
  std::string json_path;
  std::string out_dir;
  std::string overlay_path;
  std::string output_mode = "coco_rle";
  std::string point_grids_path;
  AmgParams params;
  bool quiet = false;

  nlohmann::json report(const std::string& image_name, const RgbImage& image, AmgOutputMode mode,
                        const std::vector<AmgMask>& masks, const std::vector<std::string>& png_names) const {
    return amg_report_json(image_name, image.height, image.width, model.source().describe(), params, mode, masks,
                           png_names);
  }

  void run_batch_mode(AmgOutputMode mode) {
    if (!json_path.empty() || !overlay_path.empty()) {
      throw Error("batch mode writes one JSON per image into --out-dir; --json and --overlay are for one --image");
    }
    if (mode == AmgOutputMode::binary_mask) {
      throw Error("batch mode keeps the masks in each image's JSON: use --output-mode coco_rle or uncompressed_rle");
    }
    batch.out_dir = out_dir;
    const std::vector<BatchItem> items = batch.items(".json");
    if (!coco_path.empty()) require_writable(coco_path, "--coco");
    auto loaded = model.load();
    const AutomaticMaskGenerator generator(loaded, params, EncodeOptions{.precision = model.encoder_precision()});
    const int failed = run_batch(batch, items, [&](const BatchItem& item) -> BatchCompute {
      return [&, image = decode_image_file(item.input, model.max_image_pixels), item]() -> BatchWrite {
        const std::vector<AmgMask> masks = generator.generate(image);
        const std::string name = std::filesystem::path(item.input).filename().string();
        return [json = report(name, image, mode, masks, {}).dump() + "\n", output = item.output] {
          write_file_atomically(output, json);
        };
      };
    });
    if (!coco_path.empty()) {
      std::vector<CocoSource> sources;
      for (const BatchItem& item : items) sources.push_back({item.input, item.output});
      write_coco_dataset(coco_path, sources);
    }
    if (failed > 0) throw CLI::RuntimeError(1);
  }

  void run(bool points_per_side_given) {
    const auto process_start = std::chrono::steady_clock::now();
    if (!point_grids_path.empty()) {
      if (points_per_side_given) throw Error("give exactly one of --points-per-side and --point-grids");
      params.points_per_side.reset();
      params.point_grids = read_point_grids(point_grids_path);
    }
    validate_amg_params(params);
    const AmgOutputMode mode = parse_amg_output_mode(output_mode);
    if (batch.active()) return run_batch_mode(mode);
    if (image_path.empty()) throw Error("give --image (one photo) or --input-dir/--input-list (a batch)");
    if (!coco_path.empty()) throw Error("--coco is for batch mode (--input-dir/--input-list)");
    if (mode == AmgOutputMode::binary_mask && out_dir.empty()) {
      throw Error("--output-mode binary_mask writes the masks as PNG files: give --out-dir (or use coco_rle or "
                  "uncompressed_rle to keep them in the JSON)");
    }
    if (json_path.empty() && out_dir.empty() && overlay_path.empty()) {
      throw Error("nothing to write: give --json, --out-dir and/or --overlay");
    }
    StagedOutputs outputs;
    AtomicFile* json_file = outputs.add(json_path, "--json");
    AtomicFile* overlay_file = outputs.add(overlay_path, "--overlay");
    if (!out_dir.empty()) {
      std::error_code error;
      std::filesystem::create_directories(out_dir, error);
      if (error) throw Error("--out-dir '" + out_dir + "': cannot create it (" + error.message() + ")");
    }

    auto loaded = model.load();
    const RgbImage image = read_photo(image_path, model.max_image_pixels);
    const AutomaticMaskGenerator generator(loaded, params, EncodeOptions{.precision = model.encoder_precision()});
    ProgressLine progress;
    const auto generate_start = std::chrono::steady_clock::now();
    const std::vector<AmgMask> masks = generator.generate(image, [&](int64_t done, int64_t total) {
      if (!quiet) progress.update(done, total);
    });
    const double generate_ms = milliseconds_since(generate_start);
    if (stage_profile_enabled()) stage_profile_print(stderr, 1, "run");

    std::vector<std::string> png_names;
    for (size_t i = 0; i < masks.size() && !out_dir.empty(); ++i) {
      std::string png_name;
      {
        char name[32];
        std::snprintf(name, sizeof name, "mask_%04zu.png", i);
        png_name = name;
        const std::vector<uint8_t> bits = decode_rle(masks[i].segmentation);
        std::vector<uint8_t> gray(bits.size());
        std::transform(bits.begin(), bits.end(), gray.begin(), [](uint8_t b) { return b ? uint8_t{255} : uint8_t{0}; });
        const std::vector<uint8_t> png = encode_png_gray8(gray.data(), image.width, image.height);
        // Each PNG complete on its own (temporary file + rename), one open file at a time.
        AtomicFile file((std::filesystem::path(out_dir) / png_name).string());
        file.write(png.data(), png.size());
        file.commit();
      }
      png_names.push_back(png_name);
    }
    nlohmann::json result = report(std::filesystem::path(image_path).filename().string(), image, mode, masks, png_names);
    if (overlay_file) {
      std::vector<UncompressedRle> rles;
      for (const AmgMask& m : masks) rles.push_back(m.segmentation);
      const RgbImage overlay = render_masks_overlay(image, rles);
      const std::vector<uint8_t> png = encode_png_rgb8(overlay.pixels.data(), overlay.width, overlay.height);
      overlay_file->write(png.data(), png.size());
    }
    result["timing_ms"] = {{"generate", generate_ms}, {"total", milliseconds_since(process_start)}};
    if (json_file) {
      const std::string json = result.dump(1) + "\n";
      json_file->write(json.data(), json.size());
    }
    outputs.commit_all();
    std::printf("%zu masks (generate %.2f s, total %.2f s)\n", masks.size(), generate_ms / 1000.0,
                milliseconds_since(process_start) / 1000.0);
  }
};

}  // namespace

void register_everything(CLI::App& app) {
  auto command = std::make_shared<EverythingCommand>();
  CLI::App* sub = app.add_subcommand(
      "everything",
      "Segment everything: Meta's automatic mask generator.\n"
      "Segment everything: Meta's SAM2AutomaticMaskGenerator (a grid of clicks over the photo and, with "
      "--crop-n-layers, over crops of it; filtered by predicted IoU and stability, de-duplicated by box NMS). "
      "Every official parameter is a flag of the same name with dashes. Writes the official records as JSON "
      "(--json), one PNG per mask (--out-dir) and/or an overlay of all masks (--overlay). SAM2RT_PROFILE=1 in the "
      "environment prints where the time went (per stage, summed over threads) on stderr.");
  command->model.add_to(*sub);
  command->model.add_device_to(*sub);
  AmgParams& p = command->params;
  auto* image = sub->add_option("--image", command->image_path, "input photo (PNG or JPEG)")->check(CLI::ExistingFile);
  command->batch.add_to(*sub, image);
  sub->add_option("--coco", command->coco_path,
                  "batch mode: also write one COCO dataset file (images, annotations with RLE segmentation, "
                  "bbox, area, score)");
  sub->add_option("--json", command->json_path,
                  "JSON report: format sam2-amg-1, image, image_hw, params, masks (official records)");
  sub->add_option("--out-dir", command->out_dir,
                  "one image: folder for the masks as PNG files (mask_0000.png, ...); batch mode: folder for one "
                  "JSON per image and manifest.jsonl");
  sub->add_option("--overlay", command->overlay_path, "PNG of the photo with every mask in its own colour");
  sub->add_option("--output-mode", command->output_mode,
                  "segmentation in the JSON: coco_rle (COCO compressed RLE string, default), uncompressed_rle "
                  "(column-major run lengths) or binary_mask (the PNG file name in --out-dir)")
      ->capture_default_str();
  auto* pps = sub->add_option("--points-per-side", *p.points_per_side, "grid points per side of the image (crop layer 0)")
                  ->capture_default_str();
  sub->add_option("--point-grids", command->point_grids_path,
                  "JSON file of custom grids instead of --points-per-side: [[[x, y], ...], ...], one per crop "
                  "layer, normalised to [0, 1]")
      ->check(CLI::ExistingFile);
  sub->add_option("--points-per-batch", p.points_per_batch, "points decoded together")->capture_default_str();
  sub->add_option("--pred-iou-thresh", p.pred_iou_thresh, "keep masks whose predicted IoU is above this ([0, 1])")
      ->capture_default_str();
  sub->add_option("--stability-score-thresh", p.stability_score_thresh,
                  "keep masks whose stability score is at least this ([0, 1])")
      ->capture_default_str();
  sub->add_option("--stability-score-offset", p.stability_score_offset,
                  "logit offset of the two cut-offs of the stability score")
      ->capture_default_str();
  sub->add_option("--mask-threshold", p.mask_threshold, "logit threshold of the binary masks")->capture_default_str();
  sub->add_option("--box-nms-thresh", p.box_nms_thresh, "box IoU above which a duplicate mask is dropped ([0, 1])")
      ->capture_default_str();
  sub->add_option("--crop-n-layers", p.crop_n_layers, "crop layers: layer i adds 2^i x 2^i crops of the photo")
      ->capture_default_str();
  sub->add_option("--crop-nms-thresh", p.crop_nms_thresh, "box IoU for duplicates between crops ([0, 1])")
      ->capture_default_str();
  sub->add_option("--crop-overlap-ratio", p.crop_overlap_ratio, "overlap of neighbouring crops ([0, 1))")
      ->capture_default_str();
  sub->add_option("--crop-n-points-downscale-factor", p.crop_n_points_downscale_factor,
                  "crop layer i uses points-per-side / factor^i points per side")
      ->capture_default_str();
  sub->add_option("--min-mask-region-area", p.min_mask_region_area,
                  "fill holes and remove islands of at most this many low-res pixels (the predictor's "
                  "max_hole_area / max_sprinkle_area)")
      ->capture_default_str();
  sub->add_option("--use-m2m", p.use_m2m, "refine each mask once with its own logits as mask input (true|false)")
      ->capture_default_str();
  sub->add_option("--multimask-output", p.multimask_output, "3 masks per point (true) or 1 (false)")
      ->capture_default_str();
  sub->add_flag("--quiet", command->quiet, "no progress line on stderr");
  sub->callback([command, pps] { command->run(pps->count() > 0); });
}

}  // namespace sam2rt::cli
