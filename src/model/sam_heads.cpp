#include "model/sam_heads.h"

#include <algorithm>
#include <exception>

#include "core/error.h"
#include "kernels/decoder_threads.h"
#include "kernels/stage_profile.h"
#include "model/mask_postprocess.h"

namespace sam2rt {

namespace {

// Upscales the selected logits to the original size and clamps the low-res ones.
void finish(MaskPrediction& r, int orig_w, int orig_h, const MaskFill& fill) {
  ScopedStage stage("decoder: masks to the original size");
  if (fill.active()) {
    Tensor filled = r.low_res_masks.clone();
    fill_holes_and_sprinkles(filled, fill);
    r.masks = upscale_masks_to_original(filled, orig_w, orig_h);
  } else {
    r.masks = upscale_masks_to_original(r.low_res_masks, orig_w, orig_h);
  }
  r.low_res_masks = clamp_low_res_logits(r.low_res_masks);
}

}  // namespace

SamHeads::SamHeads(const ModelConfig& config, const WeightMap& weights)
    : config_(config),
      prompt_encoder_(config, weights),
      dense_pe_(prompt_encoder_.dense_pe()),
      no_mask_dense_(prompt_encoder_.embed_dense(Prompt{})),
      mask_decoder_(config, weights, dense_pe_) {}

DecoderImageState SamHeads::prepare_image(const DecoderFeatures& features) const {
  const DecoderThreads threads;
  return mask_decoder_.prepare_image(features, no_mask_dense_, threads.count());
}

MaskPrediction SamHeads::decode(const DecoderImageState& image, const Prompt& prompt, bool multimask, int orig_w,
                                int orig_h, int threads, std::optional<float> skip_masks_iou_at_most) const {
  MaskPrediction r;
  {
    ScopedStage stage("decoder: prompt encoder");
    r.sparse_embeddings = prompt_encoder_.embed_sparse(prompt, orig_w, orig_h);
  }
  MaskDecoderOutput decoded;
  if (prompt.mask_input.empty()) {
    r.dense_embeddings = no_mask_dense_;
    MasksWanted wanted;
    if (multimask && skip_masks_iou_at_most) {
      // The selected masks of a multimask prediction are tokens 1..T-1.
      wanted = [threshold = *skip_masks_iou_at_most](const Tensor& iou) {
        for (int64_t t = 1; t < iou.numel(); ++t) {
          if (iou[t] > threshold) return true;
        }
        return false;
      };
    }
    decoded = mask_decoder_.predict_masks(image, r.sparse_embeddings, threads, wanted);
  } else {
    r.dense_embeddings = prompt_encoder_.embed_dense(prompt);
    const TransformerImageInput input = mask_decoder_.prepare_dense(image, r.dense_embeddings, threads);
    decoded = mask_decoder_.predict_masks(image, input, r.sparse_embeddings, threads);
  }

  const int num_tokens = mask_decoder_.num_mask_tokens();
  const int64_t l = config_.low_res_mask_size(), pixels = l * l;
  const float* all_iou = decoded.iou.data();
  r.all_iou.assign(all_iou, all_iou + num_tokens);
  r.object_score_logit = decoded.object_score_logit;
  if (decoded.masks.empty()) {
    // The upscaling was skipped (multimask only): the selection is tokens 1..T-1, without masks.
    for (int t = 1; t < num_tokens; ++t) r.token_indices.push_back(t);
  } else {
    r.all_low_res_logits = decoded.masks.reshaped({1, num_tokens, l, l});
    const MaskSelection selection =
        select_mask_tokens(decoded.masks.data(), pixels, all_iou, num_tokens, multimask, config_);
    r.token_indices = selection.token_indices;
    r.stability_score_token0 = selection.stability_score_token0;
    r.single_mask_token_used = selection.single_mask_token_used;
    // The selection is consecutive tokens (1..T-1, or one): a view, no copy.
    for (size_t m = 1; m < r.token_indices.size(); ++m) {
      if (r.token_indices[m] != r.token_indices[0] + static_cast<int>(m)) {
        throw Error("mask tokens selected out of order");
      }
    }
    r.low_res_masks = decoded.masks.rows(r.token_indices.front(), static_cast<int64_t>(r.token_indices.size()));
  }
  for (const int token : r.token_indices) r.iou_predictions.push_back(all_iou[token]);
  return r;
}

MaskPrediction SamHeads::predict(const DecoderImageState& image, const Prompt& prompt, bool multimask, int orig_w,
                                 int orig_h, const MaskFill& fill) const {
  validate_prompt(prompt, orig_w, orig_h, config_);
  MaskPrediction r;
  {
    const DecoderThreads threads;
    r = decode(image, prompt, multimask, orig_w, orig_h, threads.count());
  }
  finish(r, orig_w, orig_h, fill);
  return r;
}

MaskPrediction SamHeads::predict(const DecoderFeatures& features, const Prompt& prompt, bool multimask, int orig_w,
                                 int orig_h, const MaskFill& fill) const {
  validate_prompt(prompt, orig_w, orig_h, config_);
  return predict(prepare_image(features), prompt, multimask, orig_w, orig_h, fill);
}

std::vector<MaskPrediction> SamHeads::predict_batch(const DecoderImageState& image, const std::vector<Prompt>& prompts,
                                                    bool multimask, int orig_w, int orig_h,
                                                    const MaskFill& fill) const {
  for (const Prompt& prompt : prompts) validate_prompt(prompt, orig_w, orig_h, config_);
  if (prompts.size() == 1) return {predict(image, prompts.front(), multimask, orig_w, orig_h, fill)};

  std::vector<MaskPrediction> results(prompts.size());
  const DecoderThreads threads;
  std::exception_ptr failure;
  const int64_t count = static_cast<int64_t>(prompts.size());
  // Whole prompts per thread: no barrier inside a decode. An exception cannot
  // leave an OpenMP region, so the first one is carried out and rethrown.
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads.count())
  for (int64_t i = 0; i < count; ++i) {
    try {
      MaskPrediction& r = results[static_cast<size_t>(i)];
      r = decode(image, prompts[static_cast<size_t>(i)], multimask, orig_w, orig_h, 1);
      finish(r, orig_w, orig_h, fill);
    } catch (...) {
#pragma omp critical(sam_heads_failure)
      if (!failure) failure = std::current_exception();
    }
  }
  if (failure) std::rethrow_exception(failure);
  return results;
}

std::vector<MaskPrediction> SamHeads::predict_batch_low_res(const DecoderImageState& image,
                                                            const std::vector<Prompt>& prompts, bool multimask,
                                                            int orig_w, int orig_h,
                                                            std::optional<float> skip_masks_iou_at_most) const {
  for (const Prompt& prompt : prompts) validate_prompt(prompt, orig_w, orig_h, config_);
  const DecoderThreads threads;
  if (prompts.size() == 1) {
    return {decode(image, prompts.front(), multimask, orig_w, orig_h, threads.count(), skip_masks_iou_at_most)};
  }
  std::vector<MaskPrediction> results(prompts.size());
  std::exception_ptr failure;
  const int64_t count = static_cast<int64_t>(prompts.size());
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads.count())
  for (int64_t i = 0; i < count; ++i) {
    try {
      results[static_cast<size_t>(i)] =
          decode(image, prompts[static_cast<size_t>(i)], multimask, orig_w, orig_h, 1, skip_masks_iou_at_most);
    } catch (...) {
#pragma omp critical(sam_heads_failure)
      if (!failure) failure = std::current_exception();
    }
  }
  if (failure) std::rethrow_exception(failure);
  return results;
}

std::vector<MaskPrediction> SamHeads::predict_batch(const DecoderFeatures& features, const std::vector<Prompt>& prompts,
                                                    bool multimask, int orig_w, int orig_h,
                                                    const MaskFill& fill) const {
  for (const Prompt& prompt : prompts) validate_prompt(prompt, orig_w, orig_h, config_);
  return predict_batch(prepare_image(features), prompts, multimask, orig_w, orig_h, fill);
}

}  // namespace sam2rt
