#include "model/sam_heads.h"

#include <algorithm>
#include <exception>
#include <utility>

#include "backends/cpu_backend.h"
#include "core/error.h"
#include "kernels/decoder/threads.h"
#include "kernels/stage_profile.h"
#include "model/mask_decoder.h"
#include "model/mask_postprocess.h"

namespace sam2rt {

namespace {

// The most prompts decoded in lockstep by one thread (LowRankMaskDecoder's group
// predict_masks): each group reads the per-image arrays once per block of image
// rows. Since the attentions' softmax runs block by block, a prompt's arrays are
// ~4 MB for Tiny, and groups of up to 16 decode a batch of 64 ~4% faster than
// groups of 4 (docs/PERFORMANCE.md).
constexpr size_t kMaxPromptsInLockstep = 16;

// Prompts per thread decoded one at a time at the end of a batch with the IoU
// filter (decode_in_groups): one, since groups of up to 16 (tiny_g16 ~1.3%
// faster than with two; none: slower).
constexpr size_t kSingleTailPerThread = 1;

// Appends groups covering prompts [first, first + count): as few as hold at
// most kMaxPromptsInLockstep each, rounded up to a multiple of `threads` so
// that every thread gets as many, their sizes within one of each other.
void split_into_groups(size_t first, size_t count, size_t threads, std::vector<std::pair<size_t, size_t>>& groups) {
  size_t n = (count + kMaxPromptsInLockstep - 1) / kMaxPromptsInLockstep;
  n = std::min(count, (n + threads - 1) / threads * threads);
  for (size_t k = 0; k < n; ++k) {
    const size_t begin = first + count * k / n, end = first + count * (k + 1) / n;
    groups.emplace_back(begin, end - begin);
  }
}

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

SamHeads::SamHeads(const ModelConfig& config, const WeightMap& weights, std::shared_ptr<Backend> backend)
    : config_(config),
      prompt_encoder_(config, weights),
      dense_pe_(prompt_encoder_.dense_pe()),
      no_mask_dense_(prompt_encoder_.embed_dense(Prompt{})),
      backend_(backend != nullptr ? std::move(backend) : std::make_shared<CpuBackend>()),
      decoder_(std::make_shared<const MaskDecoder>(config, weights, dense_pe_, no_mask_dense_, backend_)) {
  if (backend_->records()) return;
  if (LowRankMaskDecoder::applies(config)) low_rank_.emplace(config, weights, dense_pe_);
  for (const auto& [key, tensor] : weights.all()) {
    if (key.starts_with("sam_mask_decoder.") || key.starts_with("sam_prompt_encoder.")) weights_.insert(key, tensor);
  }
}

SamHeads::~SamHeads() = default;

bool SamHeads::uses_low_rank(const HeadsImage& image, const Prompt& prompt) {
  return image.has_low_rank() && prompt.mask_input.empty();
}

ProgramStats SamHeads::device_decoder_ops() const {
  return decodes_on_device() ? decoder_->last_ops() : ProgramStats{};
}

int64_t SamHeads::device_decoder_max_batch() const {
  return decodes_on_device() ? decoder_->max_prompts_per_batch() : 0;
}

HeadsImage SamHeads::prepare_image(const DecoderFeatures& features, DeviceDecoderFeatures on_device) const {
  check_decoder_features(features, config_);
  if (low_rank_) {
    const DecoderThreads threads;
    return HeadsImage(low_rank_->prepare_image(features, no_mask_dense_, threads.count()), features, backend_);
  }
  if (on_device.image_embed.empty()) on_device = upload_decoder_features(*backend_, features);
  return prepare_image(std::move(on_device));
}

HeadsImage SamHeads::prepare_image(DeviceDecoderFeatures on_device) const {
  if (!decodes_on_device()) throw Error("features on a device need a mask decoder on that device");
  return HeadsImage(std::move(on_device));
}

std::vector<MaskPrediction> SamHeads::decode(const HeadsImage& image, const Prompt* prompts, size_t count,
                                             bool multimask, int orig_w, int orig_h, int threads,
                                             std::optional<float> skip_masks_iou_at_most) const {
  std::vector<MaskPrediction> results(count);
  {
    ScopedStage stage("decoder: prompt encoder");
    for (size_t g = 0; g < count; ++g) {
      results[g].sparse_embeddings = prompt_encoder_.embed_sparse(prompts[g], orig_w, orig_h);
      results[g].dense_embeddings = dense_embeddings(prompts[g]);
    }
  }
  return decode_embedded(image, prompts, std::move(results), multimask, threads, skip_masks_iou_at_most);
}

Tensor SamHeads::dense_embeddings(const Prompt& prompt) const {
  if (prompt.mask_input.empty()) return no_mask_dense_;
  // A device computes a mask input's dense embedding where it decodes.
  return decodes_on_device() ? Tensor() : prompt_encoder_.embed_dense(prompt);
}

MaskPrediction SamHeads::predict_embedded(const HeadsImage& image, const Tensor& sparse, const Tensor& mask_input,
                                          bool multimask) const {
  const int64_t l = config_.low_res_mask_size();
  if (!mask_input.empty() && mask_input.shape() != Shape{1, l, l}) {
    throw Error("mask input has shape " + shape_to_string(mask_input.shape()) + ", expected " +
                shape_to_string({1, l, l}));
  }
  Prompt prompt;
  prompt.mask_input = mask_input;
  std::vector<MaskPrediction> results(1);
  results[0].sparse_embeddings = sparse;
  results[0].dense_embeddings = dense_embeddings(prompt);
  const DecoderThreads threads;
  return std::move(decode_embedded(image, &prompt, std::move(results), multimask, threads.count()).front());
}

std::vector<MaskPrediction> SamHeads::decode_embedded(const HeadsImage& image, const Prompt* prompts,
                                                      std::vector<MaskPrediction> results, bool multimask,
                                                      int threads,
                                                      std::optional<float> skip_masks_iou_at_most) const {
  const size_t count = results.size();
  const bool low_rank = uses_low_rank(image, prompts[0]);
  for (size_t g = 0; g < count; ++g) {
    if (uses_low_rank(image, prompts[g]) != low_rank) throw Error("the prompts of one decode take one decoder");
  }
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
  std::vector<MaskDecoderOutput> decoded;
  if (low_rank) {
    std::vector<Tensor> sparse(count);
    for (size_t g = 0; g < count; ++g) sparse[g] = results[g].sparse_embeddings;
    const MaskTokens tokens = multimask ? MaskTokens::kMultimaskOnly : MaskTokens::kAll;
    decoded = low_rank_->predict_masks(image.low_rank(), sparse, threads, wanted, tokens);
  } else {
    decoded = decode_with_reference(image.reference(), prompts, results, count);
    for (size_t g = 0; g < count; ++g) {
      // As the fast path, which skips their object score and upscaling (prompts without mask input only).
      if (wanted && prompts[g].mask_input.empty() && !wanted(decoded[g].iou)) {
        decoded[g].masks = Tensor();
        decoded[g].object_score_logit = 0;
      }
    }
  }

  const int num_tokens = decoder_->num_mask_tokens();
  const int64_t l = config_.low_res_mask_size(), pixels = l * l;
  for (size_t g = 0; g < count; ++g) {
    MaskPrediction& r = results[g];
    const float* all_iou = decoded[g].iou.data();
    r.all_iou.assign(all_iou, all_iou + num_tokens);
    r.object_score_logit = decoded[g].object_score_logit;
    if (decoded[g].masks.empty()) {
      // The upscaling was skipped (multimask only): the selection is tokens 1..T-1, without masks.
      for (int t = 1; t < num_tokens; ++t) r.token_indices.push_back(t);
    } else {
      const int64_t first = decoded[g].first_mask_token;
      r.all_low_res_logits = decoded[g].masks.reshaped({1, num_tokens - first, l, l});
      r.all_low_res_first_token = static_cast<int>(first);
      if (!multimask && first != 0) throw Error("a single-mask prediction needs every mask token");
      const MaskSelection selection =
          select_mask_tokens(decoded[g].masks.data(), pixels, all_iou, num_tokens, multimask, config_);
      r.token_indices = selection.token_indices;
      r.stability_score_token0 = selection.stability_score_token0;
      r.single_mask_token_used = selection.single_mask_token_used;
      // The selection is consecutive tokens (1..T-1, or one): a view, no copy.
      for (size_t m = 1; m < r.token_indices.size(); ++m) {
        if (r.token_indices[m] != r.token_indices[0] + static_cast<int>(m)) {
          throw Error("mask tokens selected out of order");
        }
      }
      r.low_res_masks =
          decoded[g].masks.rows(r.token_indices.front() - first, static_cast<int64_t>(r.token_indices.size()));
      r.mask_tokens_out = std::move(decoded[g].mask_tokens_out);
    }
    for (const int token : r.token_indices) r.iou_predictions.push_back(all_iou[token]);
  }
  return results;
}

MaskPrediction SamHeads::predict(const HeadsImage& image, const Prompt& prompt, bool multimask, int orig_w,
                                 int orig_h, const MaskFill& fill) const {
  validate_prompt(prompt, orig_w, orig_h, config_);
  MaskPrediction r;
  {
    const DecoderThreads threads;
    r = std::move(decode(image, &prompt, 1, multimask, orig_w, orig_h, threads.count()).front());
  }
  finish(r, orig_w, orig_h, fill);
  return r;
}

MaskPrediction SamHeads::predict(const DecoderFeatures& features, const Prompt& prompt, bool multimask, int orig_w,
                                 int orig_h, const MaskFill& fill) const {
  validate_prompt(prompt, orig_w, orig_h, config_);
  return predict(prepare_image(features), prompt, multimask, orig_w, orig_h, fill);
}

std::vector<MaskPrediction> SamHeads::predict_batch(const HeadsImage& image, const std::vector<Prompt>& prompts,
                                                    bool multimask, int orig_w, int orig_h,
                                                    const MaskFill& fill) const {
  for (const Prompt& prompt : prompts) validate_prompt(prompt, orig_w, orig_h, config_);
  if (prompts.size() == 1) return {predict(image, prompts.front(), multimask, orig_w, orig_h, fill)};

  const DecoderThreads threads;
  return decode_in_groups(image, prompts, multimask, orig_w, orig_h, threads.count(), std::nullopt,
                          [&](MaskPrediction& r) { finish(r, orig_w, orig_h, fill); });
}


std::vector<MaskPrediction> SamHeads::predict_batch_low_res(const HeadsImage& image,
                                                            const std::vector<Prompt>& prompts, bool multimask,
                                                            int orig_w, int orig_h,
                                                            std::optional<float> skip_masks_iou_at_most) const {
  for (const Prompt& prompt : prompts) validate_prompt(prompt, orig_w, orig_h, config_);
  const DecoderThreads threads;
  if (prompts.size() == 1) {
    return decode(image, prompts.data(), 1, multimask, orig_w, orig_h, threads.count(), skip_masks_iou_at_most);
  }
  return decode_in_groups(image, prompts, multimask, orig_w, orig_h, threads.count(), skip_masks_iou_at_most, {});
}

std::vector<MaskPrediction> SamHeads::decode_in_groups(const HeadsImage& image,
                                                       const std::vector<Prompt>& prompts, bool multimask, int orig_w,
                                                       int orig_h, int threads,
                                                       std::optional<float> skip_masks_iou_at_most,
                                                       const std::function<void(MaskPrediction&)>& then) const {
  if (!image.has_low_rank()) {
    return decode_all_with_reference(image, prompts, multimask, orig_w, orig_h, threads, skip_masks_iou_at_most,
                                     then);
  }
  // Consecutive prompts of the fast path in groups decoded in lockstep; a
  // prompt for the reference decoder (one with a mask input) alone. With the IoU
  // filter the last prompts of the batch go one at a time: a prompt whose
  // upscaling is skipped costs about half of one whose is not, so whole groups
  // at the end would leave a thread idle for up to a group's time while the
  // other finishes. Without it every prompt costs the same, the groups are even,
  // and a prompt alone costs more than in a group.
  const size_t single_tail =
      skip_masks_iou_at_most ? kSingleTailPerThread * static_cast<size_t>(std::max(threads, 1)) : 0;
  const size_t lockstep_end = prompts.size() > single_tail ? prompts.size() - single_tail : 0;
  std::vector<std::pair<size_t, size_t>> groups;
  for (size_t i = 0; i < prompts.size();) {
    size_t run = 0;
    while (i + run < lockstep_end && uses_low_rank(image, prompts[i + run])) ++run;
    if (run == 0) {
      groups.emplace_back(i++, 1);
      continue;
    }
    split_into_groups(i, run, static_cast<size_t>(std::max(threads, 1)), groups);
    i += run;
  }
  std::vector<MaskPrediction> results(prompts.size());
  std::exception_ptr failure;
  const int64_t count = static_cast<int64_t>(groups.size());
  // Whole groups per thread: no barrier inside a decode. An exception cannot
  // leave an OpenMP region, so the first one is carried out and rethrown.
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (int64_t k = 0; k < count; ++k) {
    try {
      const auto [first, n] = groups[static_cast<size_t>(k)];
      std::vector<MaskPrediction> decoded =
          decode(image, prompts.data() + first, n, multimask, orig_w, orig_h, 1, skip_masks_iou_at_most);
      for (size_t g = 0; g < n; ++g) {
        if (then) then(decoded[g]);
        results[first + g] = std::move(decoded[g]);
      }
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
