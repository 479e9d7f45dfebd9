#include "api/automatic_mask_generator.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <string>

#include "api/predictor.h"
#include "core/error.h"
#include "kernels/stage_profile.h"
#include "kernels/upscaled_mask_scan.h"
#include "model/amg_grids.h"
#include "model/box_nms.h"
#include "model/mask_postprocess.h"

namespace sam2rt {

namespace {

// The largest crop_n_layers we accept: layer 8 alone would be 65536 crops.
constexpr int kMaxCropLayers = 6;

std::string text(double v) {
  std::string s = std::to_string(v);
  s.erase(s.find_last_not_of('0') + 1);
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

void require_unit_interval(double v, const char* name) {
  if (!std::isfinite(v) || v < 0.0 || v > 1.0) {
    throw Error(std::string(name) + " must be in [0, 1], got " + text(v));
  }
}

// One candidate mask of a batch: its point (crop frame, float32), low-res logits and IoU.
struct Candidate {
  std::array<float, 2> point{};
  const float* logits = nullptr;  // [L, L], unclamped; nullptr when its IoU fails the filter unread
  float iou = 0;
  int mask_index = 0;             // which of its point's masks
};

// The candidates of a batch of points (point-major, mask-minor) and the
// predictions their logits live in: _process_batch's decoding, with the m2m
// refinement when asked for.
struct DecodedBatch {
  std::vector<MaskPrediction> predictions, refined;
  std::vector<Candidate> candidates;
};

DecodedBatch decode_points(const Predictor& predictor, const std::vector<std::array<float, 2>>& points,
                           const AmgParams& p, int64_t low_res) {
  DecodedBatch batch;
  std::vector<Prompt> prompts;
  for (const auto& point : points) prompts.push_back(Prompt{{PointPrompt{point[0], point[1], 1}}, std::nullopt, Tensor()});
  // Without m2m the IoU filter comes first, so a point none of whose masks
  // passes it needs no masks: the decoder skips their upscaling (nullptr logits).
  std::optional<float> skip_masks_iou_at_most;
  if (!p.use_m2m && p.pred_iou_thresh > 0.0) skip_masks_iou_at_most = static_cast<float>(p.pred_iou_thresh);
  batch.predictions = predictor.predict_batch_low_res(prompts, p.multimask_output, skip_masks_iou_at_most);
  const int64_t plane = low_res * low_res;
  for (size_t i = 0; i < batch.predictions.size(); ++i) {
    const MaskPrediction& prediction = batch.predictions[i];
    for (size_t m = 0; m < prediction.iou_predictions.size(); ++m) {
      const float* logits =
          prediction.low_res_masks.empty() ? nullptr : prediction.low_res_masks.data() + static_cast<int64_t>(m) * plane;
      batch.candidates.push_back({points[i], logits, prediction.iou_predictions[m], static_cast<int>(m)});
    }
  }
  if (!p.use_m2m) return batch;
  // One refinement step: the same point with the candidate's clamped logits as mask input.
  std::vector<Prompt> refine_prompts;
  for (const Candidate& c : batch.candidates) {
    Tensor mask_input({1, low_res, low_res});
    std::transform(c.logits, c.logits + plane, mask_input.data(), [](float v) { return std::clamp(v, -32.0f, 32.0f); });
    refine_prompts.push_back(Prompt{{PointPrompt{c.point[0], c.point[1], 1}}, std::nullopt, mask_input});
  }
  for (size_t k = 0; k < refine_prompts.size(); k += static_cast<size_t>(p.points_per_batch)) {
    const size_t end = std::min(refine_prompts.size(), k + static_cast<size_t>(p.points_per_batch));
    const std::vector<Prompt> chunk(refine_prompts.begin() + static_cast<std::ptrdiff_t>(k),
                                    refine_prompts.begin() + static_cast<std::ptrdiff_t>(end));
    for (MaskPrediction& r : predictor.predict_batch_low_res(chunk, false)) batch.refined.push_back(std::move(r));
  }
  for (size_t k = 0; k < batch.candidates.size(); ++k) {
    batch.candidates[k].logits = batch.refined[k].low_res_masks.data();
    batch.candidates[k].iou = batch.refined[k].iou_predictions[0];
  }
  return batch;
}

// A mask that passed the filters of its batch, box in the crop's frame.
struct Kept {
  AmgMask mask;                          // segmentation empty while deferred
  std::array<int64_t, 4> box_in_crop{};  // XYXY, last set column/row
  // A mask whose RLE would outweigh its low-res plane (noisy masks on big
  // photos) waits for the NMS as (point, mask index) only; the masks the NMS
  // keeps are decoded and scanned again, which gives the same bits (a prompt
  // decodes alone as in a batch). So waiting candidates cost almost no memory.
  bool deferred = false;
  std::array<float, 2> point_in_crop{};
  int mask_index = 0;
};

// Full-image column-major RLE of the crop-frame runs (padded as uncrop_masks does).
UncompressedRle uncropped_rle(const std::vector<ColumnRun>& runs, const CropBox& crop, int64_t height,
                              int64_t width) {
  UncompressedRle rle{height, width, {}};
  int64_t last_end = 0;  // flat (column-major) end of the previous set run
  for (const ColumnRun& run : runs) {
    const int64_t start = (crop.x0 + run.x) * height + crop.y0 + run.y0;
    const int64_t end = start + (run.y1 - run.y0);
    if (!rle.counts.empty() && start == last_end) {
      rle.counts.back() += end - start;  // continues the previous column's run
    } else {
      rle.counts.push_back(start - last_end);
      rle.counts.push_back(end - start);
    }
    last_end = end;
  }
  rle.counts.push_back(height * width - last_end);
  return rle;
}

// is_box_near_crop_edge with atol 20 (float32 |a - b| <= 20 on integer coordinates).
bool near_crop_edge(const std::array<int64_t, 4>& box_in_crop, const CropBox& crop, int64_t height, int64_t width) {
  const std::array<int64_t, 4> box{box_in_crop[0] + crop.x0, box_in_crop[1] + crop.y0, box_in_crop[2] + crop.x0,
                                   box_in_crop[3] + crop.y0};
  const std::array<int64_t, 4> crop_edges{crop.x0, crop.y0, crop.x1, crop.y1};
  const std::array<int64_t, 4> image_edges{0, 0, width, height};
  for (size_t k = 0; k < 4; ++k) {
    const bool near_crop = std::llabs(box[k] - crop_edges[k]) <= 20;
    const bool near_image = std::llabs(box[k] - image_edges[k]) <= 20;
    if (near_crop && !near_image) return true;
  }
  return false;
}

// The logits the predictor upsamples: `logits` itself, or its hole/sprinkle-filled copy in `storage`.
const float* filled_logits(const float* logits, int64_t low_res, const MaskFill& fill, Tensor& storage) {
  if (!fill.active()) return logits;
  storage = Tensor::uninitialized({1, low_res, low_res});
  std::copy_n(logits, low_res * low_res, storage.data());
  fill_holes_and_sprinkles(storage, fill);
  return storage.data();
}

RgbImage cut(const RgbImage& image, const CropBox& crop) {
  RgbImage out;
  out.width = static_cast<int>(crop.width());
  out.height = static_cast<int>(crop.height());
  out.pixels.resize(static_cast<size_t>(out.width) * static_cast<size_t>(out.height) * 3);
  for (int64_t y = 0; y < crop.height(); ++y) {
    const uint8_t* src = image.pixels.data() + ((crop.y0 + y) * image.width + crop.x0) * 3;
    std::copy_n(src, crop.width() * 3, out.pixels.data() + y * crop.width() * 3);
  }
  return out;
}

std::array<float, 4> as_float(const std::array<int64_t, 4>& box) {
  return {static_cast<float>(box[0]), static_cast<float>(box[1]), static_cast<float>(box[2]),
          static_cast<float>(box[3])};
}

}  // namespace

void validate_amg_params(const AmgParams& p) {
  if (p.points_per_side.has_value() == !p.point_grids.empty()) {
    throw Error("give exactly one of points_per_side and point_grids");
  }
  if (p.points_per_side && *p.points_per_side < 1) {
    throw Error("points_per_side must be at least 1, got " + std::to_string(*p.points_per_side));
  }
  if (p.points_per_batch < 1) {
    throw Error("points_per_batch must be at least 1, got " + std::to_string(p.points_per_batch));
  }
  require_unit_interval(p.pred_iou_thresh, "pred_iou_thresh");
  require_unit_interval(p.stability_score_thresh, "stability_score_thresh");
  require_unit_interval(p.box_nms_thresh, "box_nms_thresh");
  require_unit_interval(p.crop_nms_thresh, "crop_nms_thresh");
  if (!std::isfinite(p.stability_score_offset) || p.stability_score_offset < 0) {
    throw Error("stability_score_offset must be a finite number >= 0, got " + text(p.stability_score_offset));
  }
  if (!std::isfinite(p.mask_threshold)) throw Error("mask_threshold must be a finite number");
  if (p.crop_n_layers < 0 || p.crop_n_layers > kMaxCropLayers) {
    throw Error("crop_n_layers must be in [0, " + std::to_string(kMaxCropLayers) + "], got " +
                std::to_string(p.crop_n_layers));
  }
  if (!std::isfinite(p.crop_overlap_ratio) || p.crop_overlap_ratio < 0 || p.crop_overlap_ratio >= 1) {
    throw Error("crop_overlap_ratio must be in [0, 1), got " + text(p.crop_overlap_ratio));
  }
  if (p.crop_n_points_downscale_factor < 1) {
    throw Error("crop_n_points_downscale_factor must be at least 1, got " +
                std::to_string(p.crop_n_points_downscale_factor));
  }
  if (!std::isfinite(p.min_mask_region_area) || p.min_mask_region_area < 0) {
    throw Error("min_mask_region_area must be a finite number >= 0, got " + text(p.min_mask_region_area));
  }
  if (p.points_per_side) {
    const auto grids = build_all_layer_point_grids(*p.points_per_side, p.crop_n_layers,
                                                   p.crop_n_points_downscale_factor);
    for (size_t layer = 0; layer < grids.size(); ++layer) {
      if (grids[layer].empty()) {
        throw Error("crop layer " + std::to_string(layer) + " gets no points: points_per_side " +
                    std::to_string(*p.points_per_side) + " / crop_n_points_downscale_factor^" +
                    std::to_string(layer) + " is below 1");
      }
    }
    return;
  }
  if (p.point_grids.size() < static_cast<size_t>(p.crop_n_layers) + 1) {
    throw Error("point_grids has " + std::to_string(p.point_grids.size()) + " grids but crop_n_layers " +
                std::to_string(p.crop_n_layers) + " needs one per layer (" + std::to_string(p.crop_n_layers + 1) +
                ")");
  }
  for (size_t layer = 0; layer < p.point_grids.size(); ++layer) {
    if (p.point_grids[layer].empty()) throw Error("point_grids[" + std::to_string(layer) + "] is empty");
    for (const auto& point : p.point_grids[layer]) {
      for (const double v : point) {
        if (!std::isfinite(v) || v < 0 || v > 1) {
          throw Error("point_grids[" + std::to_string(layer) + "] has a coordinate " + text(v) +
                      " outside [0, 1] (grids are normalised to the crop)");
        }
      }
    }
  }
}

AutomaticMaskGenerator::AutomaticMaskGenerator(std::shared_ptr<const Sam2Model> model, AmgParams params,
                                               EncodeOptions encode)
    : model_(std::move(model)), params_(std::move(params)), encode_(encode) {
  validate_amg_params(params_);
}

std::vector<AmgMask> AutomaticMaskGenerator::generate(const RgbImage& image, const AmgProgress& progress) const {
  const AmgParams& p = params_;
  if (image.width <= 0 || image.height <= 0 ||
      image.pixels.size() != static_cast<size_t>(image.width) * static_cast<size_t>(image.height) * 3) {
    throw Error("segment everything needs a non-empty RGB image");
  }
  const int64_t height = image.height, width = image.width;
  const auto grids = p.points_per_side ? build_all_layer_point_grids(*p.points_per_side, p.crop_n_layers,
                                                                      p.crop_n_points_downscale_factor)
                                       : p.point_grids;
  const std::vector<CropBox> crops = generate_crop_boxes(height, width, p.crop_n_layers, p.crop_overlap_ratio);
  int64_t total_points = 0;
  for (const CropBox& crop : crops) {
    if (crop.width() <= 0 || crop.height() <= 0) {
      throw Error("the " + std::to_string(width) + "x" + std::to_string(height) +
                  " image is too small for crop_n_layers " + std::to_string(p.crop_n_layers));
    }
    total_points += static_cast<int64_t>(grids[static_cast<size_t>(crop.layer)].size());
  }

  const MaskFill fill{0.0f, p.min_mask_region_area, p.min_mask_region_area};
  Predictor predictor(model_, fill);
  const int64_t low_res = model_->config().low_res_mask_size();
  // calculate_stability_score compares float32 logits with Python floats: the
  // cut-offs are summed in double, then rounded to float32.
  const auto threshold = static_cast<float>(p.mask_threshold);
  const auto high = static_cast<float>(p.mask_threshold + p.stability_score_offset);
  const auto low = static_cast<float>(p.mask_threshold - p.stability_score_offset);
  const auto iou_thresh = static_cast<float>(p.pred_iou_thresh);
  const auto stability_thresh = static_cast<float>(p.stability_score_thresh);

  std::vector<AmgMask> masks;
  std::vector<std::array<float, 4>> image_boxes;  // XYXY in the image, for the NMS between crops
  std::vector<float> crop_scores;
  int64_t points_done = 0;
  for (const CropBox& crop : crops) {
    predictor.set_image(cut(image, crop), encode_);
    const auto crop_w = static_cast<double>(crop.width()), crop_h = static_cast<double>(crop.height());
    const auto& grid = grids[static_cast<size_t>(crop.layer)];
    const int threads = omp_get_max_threads();
    std::vector<UpscaledMaskScanner> scanners;
    for (int t = 0; t < threads; ++t) scanners.emplace_back(low_res, low_res, crop.height(), crop.width());

    std::vector<Kept> kept;
    for (size_t first = 0; first < grid.size(); first += static_cast<size_t>(p.points_per_batch)) {
      const size_t last = std::min(grid.size(), first + static_cast<size_t>(p.points_per_batch));
      std::vector<std::array<float, 2>> points;
      for (size_t i = first; i < last; ++i) {
        // grid * [crop_w, crop_h] in float64, then float32 (torch.as_tensor(points, float32)).
        points.push_back({static_cast<float>(grid[i][0] * crop_w), static_cast<float>(grid[i][1] * crop_h)});
      }
      const DecodedBatch decoded = decode_points(predictor, points, p, low_res);
      const std::vector<Candidate>& candidates = decoded.candidates;
      const int64_t plane = low_res * low_res;
      ScopedStage stage("everything: candidates (upscaled scan, stability, box, RLE)");
      std::vector<std::optional<Kept>> decided(candidates.size());
      std::exception_ptr failure;
      const auto count = static_cast<int64_t>(candidates.size());
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
      for (int64_t k = 0; k < count; ++k) {
        try {
          const Candidate& c = candidates[static_cast<size_t>(k)];
          if (p.pred_iou_thresh > 0.0 && !(c.iou > iou_thresh)) continue;
          Tensor filled;
          const float* logits = filled_logits(c.logits, low_res, fill, filled);
          UpscaledMaskSummary summary;
          scanners[static_cast<size_t>(omp_get_thread_num())].scan(logits, threshold, high, low, summary);
          // A float32 division of the counts; 0/0 is NaN and fails the test, as in torch.
          const float stability = static_cast<float>(summary.above_high) / static_cast<float>(summary.above_low);
          if (p.stability_score_thresh > 0.0 && !(stability >= stability_thresh)) continue;
          std::array<int64_t, 4> box{0, 0, 0, 0};
          if (!summary.runs.empty()) {
            box = {summary.runs.front().x, std::numeric_limits<int64_t>::max(), summary.runs.back().x, 0};
            for (const ColumnRun& run : summary.runs) {
              box[1] = std::min<int64_t>(box[1], run.y0);
              box[3] = std::max<int64_t>(box[3], run.y1 - 1);
            }
          }
          if (near_crop_edge(box, crop, height, width)) continue;
          Kept result;
          result.box_in_crop = box;
          for (const ColumnRun& run : summary.runs) result.mask.area += run.y1 - run.y0;
          const auto rle_bytes = static_cast<int64_t>(summary.runs.size() * 2 * sizeof(int64_t));
          if (rle_bytes > plane * static_cast<int64_t>(sizeof(float))) {
            result.deferred = true;
            result.point_in_crop = c.point;
            result.mask_index = c.mask_index;
          } else {
            result.mask.segmentation = uncropped_rle(summary.runs, crop, height, width);
          }
          result.mask.predicted_iou = c.iou;
          result.mask.stability_score = stability;
          // uncrop_points: float32 point + int offset in float32.
          result.mask.point_coords = {c.point[0] + static_cast<float>(crop.x0), c.point[1] + static_cast<float>(crop.y0)};
          result.mask.bbox = {box[0] + crop.x0, box[1] + crop.y0, box[2] - box[0], box[3] - box[1]};
          result.mask.crop_box = {crop.x0, crop.y0, crop.width(), crop.height()};
          decided[static_cast<size_t>(k)] = std::move(result);
        } catch (...) {
#pragma omp critical(amg_failure)
          if (!failure) failure = std::current_exception();
        }
      }
      if (failure) std::rethrow_exception(failure);
      for (std::optional<Kept>& d : decided) {
        if (d) kept.push_back(std::move(*d));
      }
      points_done += static_cast<int64_t>(last - first);
      if (progress) progress(points_done, total_points);
    }

    // Duplicates within the crop: NMS on the crop-frame boxes by predicted IoU.
    ScopedStage stage("everything: box NMS and the deferred masks");
    std::vector<std::array<float, 4>> boxes;
    std::vector<float> scores;
    for (const Kept& k : kept) {
      boxes.push_back(as_float(k.box_in_crop));
      scores.push_back(k.mask.predicted_iou);
    }
    // 1 / box_area(crop_boxes): the int64 area to float32, then its reciprocal.
    const float crop_score = 1.0f / static_cast<float>(crop.width() * crop.height());
    const std::vector<int64_t> keep = batched_nms(boxes, scores, p.box_nms_thresh);
    // The deferred masks the NMS keeps: decoded and scanned again.
    std::vector<std::array<float, 2>> deferred_points;
    for (const int64_t i : keep) {
      if (kept[static_cast<size_t>(i)].deferred) deferred_points.push_back(kept[static_cast<size_t>(i)].point_in_crop);
    }
    for (size_t first = 0, next = 0; first < deferred_points.size(); first += static_cast<size_t>(p.points_per_batch)) {
      const size_t last = std::min(deferred_points.size(), first + static_cast<size_t>(p.points_per_batch));
      const DecodedBatch again = decode_points(
          predictor, std::vector<std::array<float, 2>>(deferred_points.begin() + static_cast<std::ptrdiff_t>(first),
                                                       deferred_points.begin() + static_cast<std::ptrdiff_t>(last)),
          p, low_res);
      size_t offset = 0;  // first candidate of the current point
      for (size_t j = 0; j < again.predictions.size(); ++j) {
        while (!kept[static_cast<size_t>(keep[next])].deferred) ++next;
        Kept& k = kept[static_cast<size_t>(keep[next++])];
        Tensor filled;
        const float* logits =
            filled_logits(again.candidates[offset + static_cast<size_t>(k.mask_index)].logits, low_res, fill, filled);
        offset += again.predictions[j].iou_predictions.size();
        UpscaledMaskSummary summary;
        scanners.front().scan(logits, threshold, high, low, summary);
        k.mask.segmentation = uncropped_rle(summary.runs, crop, height, width);
      }
    }
    for (const int64_t i : keep) {
      Kept& k = kept[static_cast<size_t>(i)];
      image_boxes.push_back(as_float({k.box_in_crop[0] + crop.x0, k.box_in_crop[1] + crop.y0,
                                      k.box_in_crop[2] + crop.x0, k.box_in_crop[3] + crop.y0}));
      crop_scores.push_back(crop_score);
      masks.push_back(std::move(k.mask));
    }
  }
  if (crops.size() <= 1) return masks;
  // Duplicates between crops: smaller crops win.
  std::vector<AmgMask> result;
  for (const int64_t i : batched_nms(image_boxes, crop_scores, p.crop_nms_thresh)) {
    result.push_back(std::move(masks[static_cast<size_t>(i)]));
  }
  return result;
}

}  // namespace sam2rt
