#include "model/mask_postprocess.h"

#include <algorithm>

#include "kernels/bilinear_resize.h"
#include "kernels/buffer_pool.h"
#include "kernels/connected_components.h"

namespace sam2rt {

namespace {
constexpr float kLowResClamp = 32.0f;
}

float stability_score(const float* logits, int64_t count, double delta) {
  // torch compares the float32 logits with the Python float in float32.
  const auto high = static_cast<float>(delta), low = static_cast<float>(-delta);
  int64_t intersection = 0, union_area = 0;
  for (int64_t i = 0; i < count; ++i) {
    intersection += logits[i] > high;
    union_area += logits[i] > low;
  }
  // The official ratio is a float32 division of the two counts.
  return union_area > 0 ? static_cast<float>(intersection) / static_cast<float>(union_area) : 1.0f;
}

MaskSelection select_mask_tokens(const float* all_logits, int64_t pixels, const float* iou, int num_tokens,
                                 bool multimask, const ModelConfig& config) {
  MaskSelection selection;
  if (multimask) {
    for (int t = 1; t < num_tokens; ++t) selection.token_indices.push_back(t);
    return selection;
  }
  selection.stability_score_token0 = stability_score(all_logits, pixels, config.stability_delta);
  // torch compares the float32 scores with the threshold in float32.
  if (selection.stability_score_token0 >= static_cast<float>(config.stability_thresh)) {
    selection.single_mask_token_used = true;
    selection.token_indices = {0};
    return selection;
  }
  int best = 1;
  for (int t = 2; t < num_tokens; ++t) {
    if (iou[t] > iou[best]) best = t;
  }
  selection.token_indices = {best};
  return selection;
}

Tensor upscale_masks_to_original(const Tensor& low_res, int orig_w, int orig_h) {
  // The masks come from a pool: a batch of prompts on a photo asks for hundreds
  // of megabytes, and fresh memory costs a page fault per 4 KiB on first touch
  // (~11 us on these machines, more than the resize itself). The pool keeps what
  // the largest batch held at once and recycles it for the next.
  BufferPool& pool = BufferPool::shared();
  if (low_res.rank() < 2 || orig_w <= 0 || orig_h <= 0) {
    return bilinear_resize(low_res, orig_h, orig_w);  // which refuses it, naming the sizes
  }
  Shape shape = low_res.shape();
  shape[shape.size() - 2] = orig_h;
  shape[shape.size() - 1] = orig_w;
  Tensor masks = pool.tensor(shape);
  bilinear_resize(low_res, masks);
  return masks;
}

void fill_holes_and_sprinkles(Tensor& low_res, const MaskFill& fill) {
  if (!fill.active()) return;
  const int64_t h = low_res.dim(-2), w = low_res.dim(-1), pixels = h * w, planes = low_res.numel() / pixels;
  std::vector<uint8_t> background(static_cast<size_t>(pixels)), foreground(static_cast<size_t>(pixels));
  for (int64_t p = 0; p < planes; ++p) {
    float* plane = low_res.data() + p * pixels;
    for (int64_t i = 0; i < pixels; ++i) {
      foreground[static_cast<size_t>(i)] = plane[i] > fill.threshold;
      background[static_cast<size_t>(i)] = !foreground[static_cast<size_t>(i)];
    }
    // Both labellings come from the unfilled plane; holes and sprinkles are disjoint.
    const std::vector<int32_t> hole_areas =
        fill.max_hole_area > 0 ? component_areas(background.data(), h, w) : std::vector<int32_t>{};
    const std::vector<int32_t> sprinkle_areas =
        fill.max_sprinkle_area > 0 ? component_areas(foreground.data(), h, w) : std::vector<int32_t>{};
    for (int64_t i = 0; i < pixels; ++i) {
      const auto k = static_cast<size_t>(i);
      if (!hole_areas.empty() && hole_areas[k] > 0 && hole_areas[k] <= fill.max_hole_area) {
        plane[i] = fill.threshold + 10.0f;
      } else if (!sprinkle_areas.empty() && sprinkle_areas[k] > 0 && sprinkle_areas[k] <= fill.max_sprinkle_area) {
        plane[i] = fill.threshold - 10.0f;
      }
    }
  }
}

void fill_holes_in_mask_scores(Tensor& logits, int64_t max_area) {
  const int64_t h = logits.dim(-2), w = logits.dim(-1), pixels = h * w, planes = logits.numel() / pixels;
  std::vector<uint8_t> background(static_cast<size_t>(pixels));
  for (int64_t p = 0; p < planes; ++p) {
    float* plane = logits.data() + p * pixels;
    for (int64_t i = 0; i < pixels; ++i) background[static_cast<size_t>(i)] = plane[i] <= 0.0f;
    const std::vector<int32_t> areas = component_areas(background.data(), h, w);
    for (int64_t i = 0; i < pixels; ++i) {
      const int32_t area = areas[static_cast<size_t>(i)];
      if (area > 0 && area <= max_area) plane[i] = 0.1f;
    }
  }
}

Tensor clamp_low_res_logits(const Tensor& low_res) {
  // Pooled and not zeroed first, as the upscaled masks: a batch asks for 0.75 MB
  // per prompt, and fresh memory faults on first touch.
  BufferPool& pool = BufferPool::shared();
  Tensor y = pool.tensor(low_res.shape());
  std::transform(low_res.begin(), low_res.end(), y.begin(),
                 [](float v) { return std::clamp(v, -kLowResClamp, kLowResClamp); });
  return y;
}

}  // namespace sam2rt
