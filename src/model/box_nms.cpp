#include "model/box_nms.h"

#include <algorithm>
#include <numeric>
#include <utility>

namespace sam2rt {

namespace {

// torchvision's nms_kernel (CPU).
std::vector<int64_t> nms(const std::vector<std::array<float, 4>>& boxes, const std::vector<float>& scores,
                         double iou_threshold) {
  const auto n = static_cast<int64_t>(boxes.size());
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return scores[static_cast<size_t>(a)] > scores[static_cast<size_t>(b)];
  });
  std::vector<float> areas(static_cast<size_t>(n));
  for (size_t i = 0; i < boxes.size(); ++i) areas[i] = (boxes[i][2] - boxes[i][0]) * (boxes[i][3] - boxes[i][1]);
  std::vector<uint8_t> suppressed(static_cast<size_t>(n), 0);
  std::vector<int64_t> keep;
  for (int64_t oi = 0; oi < n; ++oi) {
    const auto i = static_cast<size_t>(order[static_cast<size_t>(oi)]);
    if (suppressed[i]) continue;
    keep.push_back(static_cast<int64_t>(i));
    const std::array<float, 4>& a = boxes[i];
    for (int64_t oj = oi + 1; oj < n; ++oj) {
      const auto j = static_cast<size_t>(order[static_cast<size_t>(oj)]);
      if (suppressed[j]) continue;
      const std::array<float, 4>& b = boxes[j];
      const float w = std::max(0.0f, std::min(a[2], b[2]) - std::max(a[0], b[0]));
      const float h = std::max(0.0f, std::min(a[3], b[3]) - std::max(a[1], b[1]));
      const float inter = w * h;
      // 0/0 (two zero-area boxes) is NaN and never suppresses, as in torchvision.
      const float iou = inter / (areas[i] + areas[j] - inter);
      if (static_cast<double>(iou) > iou_threshold) suppressed[j] = 1;
    }
  }
  return keep;
}

}  // namespace

std::vector<int64_t> batched_nms(const std::vector<std::array<float, 4>>& boxes, const std::vector<float>& scores,
                                 double iou_threshold) {
  std::vector<int64_t> keep = nms(boxes, scores, iou_threshold);
  if (boxes.size() * 4 <= 4000) return keep;
  // _batched_nms_vanilla: keep_mask -> indices in ascending order -> sort by score, not stable.
  std::sort(keep.begin(), keep.end());
  std::vector<std::pair<float, int64_t>> by_score;
  by_score.reserve(keep.size());
  for (const int64_t k : keep) by_score.emplace_back(scores[static_cast<size_t>(k)], k);
  std::sort(by_score.begin(), by_score.end(),
            [](const std::pair<float, int64_t>& a, const std::pair<float, int64_t>& b) { return a.first > b.first; });
  for (size_t i = 0; i < by_score.size(); ++i) keep[i] = by_score[i].second;
  return keep;
}

}  // namespace sam2rt
