#include "mask_input_file.h"

#include <algorithm>

#include "core/error.h"
#include "io/safetensors.h"

namespace sam2rt::cli {

Tensor read_mask_input(const std::string& path, int64_t low_res, const std::string& origin) {
  SafetensorsFile file;
  try {
    file = read_safetensors(path);
  } catch (const Error& e) {
    throw Error(origin + ": " + e.what());
  }
  const Shape expected = {1, low_res, low_res};
  auto low = file.tensors.find("low_res_masks");
  auto iou = file.tensors.find("iou_predictions");
  if (low != file.tensors.end() && iou != file.tensors.end()) {
    const Tensor& masks = low->second;
    if (masks.rank() != 3 || masks.dim(1) != low_res || masks.dim(2) != low_res ||
        iou->second.numel() != masks.dim(0) || masks.dim(0) == 0) {
      throw Error(origin + ": low_res_masks " + shape_to_string(masks.shape()) + " does not match this model's " +
                  shape_to_string({-1, low_res, low_res}));
    }
    const float* scores = iou->second.data();
    const int64_t best = std::max_element(scores, scores + masks.dim(0)) - scores;
    Tensor chosen(expected);
    std::copy(masks.data() + best * low_res * low_res, masks.data() + (best + 1) * low_res * low_res, chosen.data());
    return chosen;
  }
  if (file.tensors.size() != 1) {
    throw Error(origin + ": expected a --logits file (low_res_masks + iou_predictions) or a file holding one " +
                shape_to_string(expected) + " tensor");
  }
  const Tensor& t = file.tensors.begin()->second;
  if (t.shape() != expected) {
    throw Error(origin + ": tensor has shape " + shape_to_string(t.shape()) + ", expected " +
                shape_to_string(expected));
  }
  return t.clone();
}

}  // namespace sam2rt::cli
