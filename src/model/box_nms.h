#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace sam2rt {

// torchvision.ops.batched_nms with every box in one category, as the automatic
// mask generator calls it: float32 XYXY boxes (area (x1-x0)*(y1-y0), no +1),
// suppress when IoU > iou_threshold (compared in double), kept indices in
// descending score order. Up to 1000 boxes: one stable sort (torchvision's nms).
// Above: torchvision's per-category path, which re-sorts the kept boxes with an
// unstable sort; reproduced with std::sort on the same sequence (libstdc++, as
// PyTorch's CPU sort), so ties come out as they do there.
std::vector<int64_t> batched_nms(const std::vector<std::array<float, 4>>& boxes, const std::vector<float>& scores,
                                 double iou_threshold);

}  // namespace sam2rt
