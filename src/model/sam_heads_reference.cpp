// SamHeads' decoding by the reference decoder (MaskDecoder): prompts batched
// per token count and mask input or not. The choice of decoder and the CPU fast
// path are in sam_heads.cpp.
#include <omp.h>

#include <exception>
#include <map>
#include <utility>

#include "backends/cpu_backend.h"
#include "model/mask_decoder.h"
#include "model/sam_heads.h"

namespace sam2rt {

const MaskDecoder& SamHeads::reference_decoder() const {
  const int thread = omp_in_parallel() ? omp_get_thread_num() : 0;
  if (decodes_on_device() || thread == 0) return *decoder_;
  std::lock_guard lock(thread_decoders_mutex_);
  const auto index = static_cast<size_t>(thread);
  if (thread_decoders_.size() <= index) thread_decoders_.resize(index + 1);
  if (thread_decoders_[index] == nullptr) {
    thread_decoders_[index] = std::make_shared<const MaskDecoder>(config_, weights_, dense_pe_, no_mask_dense_,
                                                                  std::make_shared<CpuBackend>());
  }
  return *thread_decoders_[index];
}

std::vector<MaskDecoderOutput> SamHeads::decode_with_reference(const DeviceDecoderFeatures& features,
                                                               const Prompt* prompts,
                                                               const std::vector<MaskPrediction>& encoded,
                                                               size_t count) const {
  std::vector<MaskDecoderOutput> decoded(count);
  const MaskDecoder& decoder = reference_decoder();
  // A batched program per (token count (points and box corners), mask input or not).
  std::map<std::pair<int64_t, bool>, std::vector<size_t>> groups;
  for (size_t g = 0; g < count; ++g) {
    groups[{encoded[g].sparse_embeddings.numel(), !prompts[g].mask_input.empty()}].push_back(g);
  }
  for (const auto& [group, members] : groups) {
    const bool with_mask_inputs = group.second;
    std::vector<Tensor> sparse, mask_inputs;
    for (const size_t g : members) {
      sparse.push_back(encoded[g].sparse_embeddings);
      if (with_mask_inputs) mask_inputs.push_back(prompts[g].mask_input);
    }
    std::vector<MaskDecoderOutput> outputs = decoder.predict_masks_batch(features, sparse, mask_inputs);
    for (size_t i = 0; i < members.size(); ++i) decoded[members[i]] = std::move(outputs[i]);
  }
  return decoded;
}

std::vector<MaskPrediction> SamHeads::decode_all_with_reference(
    const HeadsImage& image, const std::vector<Prompt>& prompts, bool multimask, int orig_w, int orig_h, int threads,
    std::optional<float> skip_masks_iou_at_most, const std::function<void(MaskPrediction&)>& then) const {
  // Every prompt in the reference decoder's batches (its backend serialises
  // them); `then` (host work on each prediction) is shared by the threads.
  std::vector<MaskPrediction> results =
      decode(image, prompts.data(), prompts.size(), multimask, orig_w, orig_h, 1, skip_masks_iou_at_most);
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
