#include "model/sam_heads.h"

#include <algorithm>
#include <map>

#include "model/mask_postprocess.h"

namespace sam2rt {

namespace {

// Bounds the decoder's working memory (per prompt a few image-sized maps) for huge batches.
constexpr size_t kMaxDecoderBatch = 16;

// Concatenates [1, ...] tensors along the first axis.
Tensor stack_batch(const std::vector<Tensor>& items) {
  Shape shape = items.front().shape();
  shape[0] = static_cast<int64_t>(items.size());
  Tensor y(shape);
  float* out = y.data();
  for (const Tensor& t : items) out = std::copy(t.begin(), t.end(), out);
  return y;
}

}  // namespace

SamHeads::SamHeads(const ModelConfig& config, const WeightMap& weights)
    : config_(config), prompt_encoder_(config, weights), mask_decoder_(config, weights) {
  dense_pe_ = prompt_encoder_.dense_pe();
}

MaskPrediction SamHeads::predict(const DecoderFeatures& features, const Prompt& prompt, bool multimask, int orig_w,
                                 int orig_h) const {
  return predict_batch(features, {prompt}, multimask, orig_w, orig_h).front();
}

std::vector<MaskPrediction> SamHeads::predict_batch(const DecoderFeatures& features,
                                                    const std::vector<Prompt>& prompts, bool multimask, int orig_w,
                                                    int orig_h) const {
  for (const Prompt& prompt : prompts) validate_prompt(prompt, orig_w, orig_h, config_);

  std::vector<MaskPrediction> results(prompts.size());
  std::map<int, std::vector<size_t>> groups;  // sparse token count -> prompt indices
  for (size_t i = 0; i < prompts.size(); ++i) {
    groups[PromptEncoder::sparse_token_count(prompts[i])].push_back(i);
  }

  const int num_tokens = mask_decoder_.num_mask_tokens();
  const int64_t l = config_.low_res_mask_size(), pixels = l * l;
  for (const auto& [token_count, members] : groups) {
    for (size_t start = 0; start < members.size(); start += kMaxDecoderBatch) {
      const std::vector<size_t> chunk(members.begin() + static_cast<std::ptrdiff_t>(start),
                                      members.begin() + static_cast<std::ptrdiff_t>(std::min(members.size(), start + kMaxDecoderBatch)));
      std::vector<Tensor> sparse, dense;
      for (size_t i : chunk) {
        sparse.push_back(prompt_encoder_.embed_sparse(prompts[i], orig_w, orig_h));
        dense.push_back(prompt_encoder_.embed_dense(prompts[i]));
      }
      const MaskDecoderOutput decoded =
          mask_decoder_.predict_masks(features, dense_pe_, stack_batch(sparse), stack_batch(dense));

      for (size_t b = 0; b < chunk.size(); ++b) {
        MaskPrediction& r = results[chunk[b]];
        r.sparse_embeddings = sparse[b];
        r.dense_embeddings = dense[b];
        const float* all_logits = decoded.masks.data() + static_cast<int64_t>(b) * num_tokens * pixels;
        const float* all_iou = decoded.iou.data() + static_cast<int64_t>(b) * num_tokens;
        r.all_low_res_logits = Tensor({1, num_tokens, l, l});
        std::copy_n(all_logits, num_tokens * pixels, r.all_low_res_logits.data());
        r.all_iou.assign(all_iou, all_iou + num_tokens);
        r.object_score_logit = decoded.object_score_logits[static_cast<int64_t>(b)];

        const MaskSelection selection = select_mask_tokens(all_logits, pixels, all_iou, num_tokens, multimask, config_);
        r.token_indices = selection.token_indices;
        r.stability_score_token0 = selection.stability_score_token0;
        r.single_mask_token_used = selection.single_mask_token_used;

        Tensor low_res({static_cast<int64_t>(r.token_indices.size()), l, l});
        for (size_t m = 0; m < r.token_indices.size(); ++m) {
          std::copy_n(all_logits + r.token_indices[m] * pixels, pixels, low_res.data() + static_cast<int64_t>(m) * pixels);
          r.iou_predictions.push_back(all_iou[r.token_indices[m]]);
        }
        r.masks = upscale_masks_to_original(low_res, orig_w, orig_h);
        r.low_res_masks = clamp_low_res_logits(low_res);
      }
    }
  }
  return results;
}

}  // namespace sam2rt
