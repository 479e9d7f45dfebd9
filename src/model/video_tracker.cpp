#include "model/video_tracker.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/error.h"
#include "kernels/antialias_resize.h"
#include "backends/cpu_backend.h"
#include "kernels/bilinear_resize.h"
#include "kernels/layout.h"
#include "kernels/patch_conv.h"
#include "kernels/stage_profile.h"
#include "model/position_encoding.h"

namespace sam2rt {

namespace {

// [1, C, H, W] -> [H*W, C].
Tensor rows_of(const Tensor& nchw) {
  const Tensor hwc = nchw_to_hwc(nchw);
  return hwc.reshaped({nchw.dim(2) * nchw.dim(3), nchw.dim(1)});
}

// [E*E, C] -> [1, C, E, E].
Tensor nchw_of(const Tensor& rows, int64_t e) {
  return hwc_to_nchw(rows.reshaped({e, e, rows.dim(1)}));
}

}  // namespace

EncodeOptions frame_encode_options() {
  EncodeOptions options;
  options.neck_levels = true;
  options.coarsest_neck_level_only = true;
  return options;
}

VideoTracker::VideoTracker(const ModelConfig& config, const TrackingConfig& tracking, const WeightMap& weights,
                           const SamHeads& heads, std::shared_ptr<Backend> backend)
    : config_(config),
      tracking_(tracking),
      heads_(heads),
      prompt_encoder_(config, weights),
      memory_encoder_(config, weights, backend != nullptr ? backend : std::make_shared<CpuBackend>()),
      memory_attention_(config, weights, backend != nullptr ? backend : std::make_shared<CpuBackend>()),
      pointer_heads_(config, weights) {
  if (!tracking_.directly_add_no_mem_embed) throw Error("video tracking needs directly_add_no_mem_embed (every SAM 2.1 config sets it)");
  if (!tracking_.use_obj_ptrs_in_encoder || !tracking_.use_mlp_for_obj_ptr_proj || !tracking_.proj_tpos_enc_in_obj_ptrs ||
      !tracking_.add_tpos_enc_to_obj_ptrs) {
    throw Error("video tracking needs the SAM 2.1 object pointer options (use_obj_ptrs_in_encoder, "
                "use_mlp_for_obj_ptr_proj, add/proj_tpos_enc_in_obj_ptrs)");
  }
  no_mem_embed_ = weights.at("no_mem_embed").reshaped({config_.embed_dim()});
  mask_downsample_weight_ = weights.at("mask_downsample.weight");
  mask_downsample_bias_ = weights.at("mask_downsample.bias");
  memory_pos_enc_ = memory_encoder_.position_encoding();
  // The neck's level-2 vision_pos_enc depends on the map's size only: made
  // once, not per frame (with every level's, 84 MB at 1024).
  const int64_t e = config_.image_embedding_size();
  vision_pos_ = rows_of(sine_position_encoding(config_.neck.pos_num_pos_feats, e, e, config_.neck.pos_temperature,
                                               config_.neck.pos_normalize));
}

FrameFeatures VideoTracker::frame_features(const EncoderOutputs& encoded) const {
  if (encoded.neck_levels.size() < 3 || encoded.neck_levels[2].empty()) {
    throw Error("a video frame's encode needs the neck levels (frame_encode_options)");
  }
  return {.decoder = encoded.decoder, .vision_feats = rows_of(encoded.neck_levels[2]), .vision_pos = vision_pos_};
}

bool VideoTracker::use_multimask(bool is_init_cond_frame, const FramePrompt& prompt) const {
  const int num_pts = static_cast<int>(prompt.points.size());
  return tracking_.multimask_output_in_sam && (is_init_cond_frame || tracking_.multimask_output_for_tracking) &&
         tracking_.multimask_min_pt_num <= num_pts && num_pts <= tracking_.multimask_max_pt_num;
}

TrackStepOutput VideoTracker::track_step(const FrameFeatures& frame, int64_t frame_idx, bool is_init_cond_frame,
                                         const FramePrompt& prompt, const ObjectOutputs& outputs,
                                         int64_t num_frames, bool reverse, const Tensor& prev_mask_logits) const {
  if (prompt.has_mask() && tracking_.use_mask_input_as_output_without_sam) {
    return use_mask_as_output(frame, prompt.mask);
  }
  const Tensor pix_feat =
      memory_conditioned_features(frame, frame_idx, is_init_cond_frame, outputs, num_frames, reverse);
  if (!prev_mask_logits.empty() && !prompt.has_points()) {
    throw Error("earlier mask logits refine a frame only together with new points");
  }
  std::vector<PromptEncoder::ModelPoint> points = prompt.points;
  // Without points the heads get one padding point (label -1).
  if (points.empty()) points.push_back({0.0f, 0.0f, -1});
  return forward_sam_heads(frame, pix_feat, points, prev_mask_logits, use_multimask(is_init_cond_frame, prompt));
}

Tensor VideoTracker::memory_conditioned_features(const FrameFeatures& frame, int64_t frame_idx,
                                                 bool is_init_cond_frame, const ObjectOutputs& outputs,
                                                 int64_t num_frames, bool reverse) const {
  const int64_t c = config_.embed_dim();
  if (is_init_cond_frame) {
    // directly_add_no_mem_embed: no memory attention on an initial conditioning frame.
    Tensor pix = frame.vision_feats.clone();
    const int64_t rows = pix.dim(0);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t k = 0; k < c; ++k) pix[r * c + k] += no_mem_embed_[k];
    return pix;
  }
  ScopedStage stage("video: memory attention");
  const MemorySelection selection = select_memories(outputs, frame_idx, num_frames, reverse, tracking_);
  const int64_t pixels = memory_pos_enc_.dim(0), mem_dim = memory_pos_enc_.dim(1);
  ObjectPointerTokens pointers;
  if (!selection.pointers.empty()) {
    Tensor stacked({static_cast<int64_t>(selection.pointers.size()), c});
    std::vector<int64_t> positions;
    for (size_t i = 0; i < selection.pointers.size(); ++i) {
      std::copy_n(selection.pointers[i].output->obj_ptr.data(), c, stacked.data() + static_cast<int64_t>(i) * c);
      positions.push_back(selection.pointers[i].position);
    }
    pointers = split_object_pointers(
        stacked, pointer_heads_.pointer_positions(positions, selection.max_obj_ptrs_in_encoder - 1), mem_dim);
  }
  const int64_t spatial = static_cast<int64_t>(selection.memories.size()) * pixels;
  const int64_t ptr_tokens = pointers.tokens.empty() ? 0 : pointers.tokens.dim(0);
  Tensor memory({spatial + ptr_tokens, mem_dim}), memory_pos({spatial + ptr_tokens, mem_dim});
  int64_t row = 0;
  for (const auto& m : selection.memories) {
    if (m.output->maskmem_features.numel() != pixels * mem_dim) throw Error("a memory frame has no memory features");
    std::copy_n(m.output->maskmem_features.data(), pixels * mem_dim, memory.data() + row * mem_dim);
    // The spatial encoding plus the temporal one of its t_pos.
    const Tensor tpos = pointer_heads_.memory_time_encoding(m.t_pos);
    for (int64_t p = 0; p < pixels; ++p)
      for (int64_t k = 0; k < mem_dim; ++k) {
        memory_pos[(row + p) * mem_dim + k] = memory_pos_enc_[p * mem_dim + k] + tpos[k];
      }
    row += pixels;
  }
  if (ptr_tokens > 0) {
    std::copy_n(pointers.tokens.data(), ptr_tokens * mem_dim, memory.data() + row * mem_dim);
    std::copy_n(pointers.positions.data(), ptr_tokens * mem_dim, memory_pos.data() + row * mem_dim);
  }
  return memory_attention_.forward(frame.vision_feats, frame.vision_pos, memory, memory_pos, ptr_tokens);
}

TrackStepOutput VideoTracker::forward_sam_heads(const FrameFeatures& frame, const Tensor& image_embed,
                                                const std::vector<PromptEncoder::ModelPoint>& points,
                                                const Tensor& mask_input, bool multimask) const {
  ScopedStage stage("video: SAM heads");
  const int64_t e = config_.image_embedding_size(), l = config_.low_res_mask_size(), s = config_.image_size;
  const DecoderFeatures features{.image_embed = nchw_of(image_embed, e),
                                 .feat_s1 = frame.decoder.feat_s1,
                                 .feat_s0 = frame.decoder.feat_s0};
  const Tensor sparse = prompt_encoder_.embed_points(points);
  const MaskPrediction prediction = heads_.predict_embedded(heads_.prepare_image(features), sparse, mask_input, multimask);

  // The selected mask: the highest predicted IoU of a multimask output (first
  // on ties), else the one the decoder returned (token 0, or its
  // stability fallback); the pointer from the multimask token of the best
  // mask, else from mask token 0.
  size_t best = 0;
  for (size_t m = 1; m < prediction.iou_predictions.size(); ++m) {
    if (prediction.iou_predictions[m] > prediction.iou_predictions[best]) best = m;
  }
  TrackStepOutput out;
  out.object_score_logit = prediction.object_score_logit;
  const bool appearing = out.object_score_logit > 0.0f;
  out.low_res_masks = Tensor({1, l, l});
  const float* logits = prediction.low_res_masks.data() + static_cast<int64_t>(best) * l * l;
  for (int64_t i = 0; i < l * l; ++i) out.low_res_masks[i] = appearing ? logits[i] : kNoObjectScore;
  out.high_res_masks = bilinear_resize(out.low_res_masks, s, s);

  const int pointer_token = multimask && tracking_.use_multimask_token_for_obj_ptr
                                ? prediction.token_indices[best]
                                : 0;
  const int64_t row = pointer_token - prediction.all_low_res_first_token;
  if (row < 0 || row >= prediction.mask_tokens_out.dim(0)) throw Error("the object pointer's mask token was not decoded");
  out.obj_ptr = pointer_heads_.object_pointer(prediction.mask_tokens_out.rows(row, 1), appearing);
  return out;
}

TrackStepOutput VideoTracker::use_mask_as_output(const FrameFeatures& frame, const Tensor& mask) const {
  const int64_t s = config_.image_size, l = config_.low_res_mask_size();
  if (mask.shape() != Shape{1, s, s}) {
    throw Error("a mask prompt has shape " + shape_to_string(mask.shape()) + ", expected " + shape_to_string({1, s, s}));
  }
  constexpr float kOutScale = 20.0f, kOutBias = -10.0f;
  TrackStepOutput out;
  out.high_res_masks = Tensor({1, s, s});
  bool appearing = false;
  for (int64_t i = 0; i < s * s; ++i) {
    out.high_res_masks[i] = mask[i] * kOutScale + kOutBias;
    appearing = appearing || mask[i] > 0.0f;
  }
  out.low_res_masks = Tensor({1, l, l});
  resize_bilinear_antialias(out.high_res_masks.data(), 1, static_cast<int>(s), static_cast<int>(s),
                            out.low_res_masks.data(), static_cast<int>(l), static_cast<int>(l));
  // The pointer: the SAM heads on the raw features (no no_mem_embed) with the
  // mask, downsampled by mask_downsample, as the only prompt.
  const Tensor mask_prompt =
      patch_conv(mask.reshaped({1, 1, s, s}), mask_downsample_weight_, mask_downsample_bias_).reshaped({1, l, l});
  const TrackStepOutput heads = forward_sam_heads(frame, frame.vision_feats, {{0.0f, 0.0f, -1}}, mask_prompt, false);
  // Mixed again by whether the mask has any pixel (fixed_no_obj_ptr): kept,
  // or the no-object pointer.
  out.obj_ptr = appearing ? heads.obj_ptr : pointer_heads_.no_object_pointer().clone();
  out.object_score_logit = kOutScale * (appearing ? 1.0f : 0.0f) + kOutBias;
  return out;
}

Tensor VideoTracker::encode_memory(const FrameFeatures& frame, const Tensor& high_res_masks,
                                   float object_score_logit, bool is_mask_from_pts) const {
  ScopedStage stage("video: memory encoder");
  // The mask the memory encoder reads: binarized (a prompted frame's), else
  // its sigmoid; then scaled and shifted.
  Tensor mask_for_mem = high_res_masks.clone();
  const bool binarize = tracking_.binarize_mask_from_pts_for_mem_enc && is_mask_from_pts;
  for (int64_t i = 0; i < mask_for_mem.numel(); ++i) {
    float v = binarize ? (mask_for_mem[i] > 0.0f ? 1.0f : 0.0f) : 1.0f / (1.0f + std::exp(-mask_for_mem[i]));
    if (tracking_.sigmoid_scale_for_mem_enc != 1.0f) v = v * tracking_.sigmoid_scale_for_mem_enc;
    if (tracking_.sigmoid_bias_for_mem_enc != 0.0f) v = v + tracking_.sigmoid_bias_for_mem_enc;
    mask_for_mem[i] = v;
  }
  // An object judged absent: its memory carries no_obj_embed_spatial.
  const bool object_absent = !(object_score_logit > 0.0f);
  Tensor features = memory_encoder_.encode(frame.vision_feats, mask_for_mem, object_absent).features;
  round_to_bfloat16_in_place(features);
  return features;
}

}  // namespace sam2rt
