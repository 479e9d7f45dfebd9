// SamHeads' decoding on a device (DeviceMaskDecoder): prompts batched per
// token count there. The CPU path stays in sam_heads.cpp.
#include <exception>
#include <map>
#include <utility>

#include "model/device_mask_decoder.h"
#include "model/sam_heads.h"

namespace sam2rt {

std::vector<MaskDecoderOutput> SamHeads::decode_on_device(const DeviceDecoderFeatures& features,
                                                          const Prompt* prompts,
                                                          const std::vector<MaskPrediction>& encoded,
                                                          size_t count) const {
  std::vector<MaskDecoderOutput> decoded(count);
  if (count == 1 && !prompts[0].mask_input.empty()) {
    decoded[0] = device_decoder_->predict_masks(features, encoded[0].sparse_embeddings, encoded[0].dense_embeddings);
    return decoded;
  }
  // A batched program per token count (points and box corners of each prompt).
  std::map<int64_t, std::vector<size_t>> by_token_count;
  for (size_t g = 0; g < count; ++g) by_token_count[encoded[g].sparse_embeddings.numel()].push_back(g);
  for (const auto& [token_values, members] : by_token_count) {
    std::vector<Tensor> sparse;
    for (const size_t g : members) sparse.push_back(encoded[g].sparse_embeddings);
    std::vector<MaskDecoderOutput> outputs = device_decoder_->predict_masks_batch(features, sparse);
    for (size_t i = 0; i < members.size(); ++i) decoded[members[i]] = std::move(outputs[i]);
  }
  return decoded;
}

std::vector<MaskPrediction> SamHeads::decode_in_groups_on_device(
    const HeadsImage& image, const std::vector<Prompt>& prompts, bool multimask, int orig_w, int orig_h, int threads,
    std::optional<float> skip_masks_iou_at_most, const std::function<void(MaskPrediction&)>& then) const {
  // Runs of consecutive prompts without mask input, each decoded in device
  // batches; a prompt with a mask input alone. The device serialises its
  // programs, so the groups go one after the other; `then` (host work on each
  // prediction) is shared by the threads.
  std::vector<MaskPrediction> results;
  results.reserve(prompts.size());
  for (size_t i = 0; i < prompts.size();) {
    size_t n = 1;
    if (prompts[i].mask_input.empty()) {
      while (i + n < prompts.size() && prompts[i + n].mask_input.empty()) ++n;
    }
    std::vector<MaskPrediction> decoded =
        decode(image, prompts.data() + i, n, multimask, orig_w, orig_h, 1, skip_masks_iou_at_most);
    for (MaskPrediction& r : decoded) results.push_back(std::move(r));
    i += n;
  }
  if (then) {
    std::exception_ptr failure;
    const int64_t count = static_cast<int64_t>(results.size());
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (int64_t k = 0; k < count; ++k) {
      try {
        then(results[static_cast<size_t>(k)]);
      } catch (...) {
#pragma omp critical(sam_heads_device_failure)
        if (!failure) failure = std::current_exception();
      }
    }
    if (failure) std::rethrow_exception(failure);
  }
  return results;
}

}  // namespace sam2rt
