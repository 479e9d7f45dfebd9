#include "model/mask_decoder.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <utility>

#include "core/error.h"
#include "kernels/layout.h"
#include "kernels/stage_profile.h"

namespace sam2rt {

namespace {

constexpr float kTransformerLayerNormEps = 1e-5f;  // nn.LayerNorm's default, as in TwoWayTransformer
constexpr float kLayerNorm2dEps = 1e-6f;           // the upscaling's LayerNorm2d

// [1, C, H, W] -> [H*W, C]
Tensor channels_last_rows(const Tensor& nchw) {
  return nchw_to_hwc(nchw).reshaped({nchw.dim(2) * nchw.dim(3), nchw.dim(1)});
}

LinearHandle load_linear(Backend& backend, const WeightMap& weights, const std::string& prefix) {
  return backend.linear(weights.at(prefix + ".weight"), weights.at(prefix + ".bias"), Precision::fp32);
}

}  // namespace

// transformer.Attention: q/k/v projections to the internal width, multi-head
// softmax(q k^T / sqrt(d)) v, out projection.
struct MaskDecoder::Attention {
  LinearHandle q_proj, k_proj, v_proj, out_proj;
  int64_t heads = 1;

  Attention(Backend& backend, const WeightMap& weights, const std::string& prefix, int64_t num_heads)
      : q_proj(load_linear(backend, weights, prefix + ".q_proj")),
        k_proj(load_linear(backend, weights, prefix + ".k_proj")),
        v_proj(load_linear(backend, weights, prefix + ".v_proj")),
        out_proj(load_linear(backend, weights, prefix + ".out_proj")),
        heads(num_heads) {
    if (q_proj.out_features % heads != 0) {
      throw Error(prefix + ": internal width " + std::to_string(q_proj.out_features) + " is not divisible by " +
                  std::to_string(heads) + " heads");
    }
  }

  // For each of `prompts` prompts, its queries [nq, C] against its keys and
  // values [nk, C] -> [prompts * nq, C]. Each input holds every prompt's rows
  // (prompts * rows) or one set all prompts share (rows): that one's projection
  // is computed once and the attention reads it for every prompt.
  DeviceTensor operator()(Backend& backend, const DeviceTensor& q_in, const DeviceTensor& k_in,
                          const DeviceTensor& v_in, int64_t prompts, int64_t nq, int64_t nk) const {
    const int64_t width = q_proj.out_features, head_dim = width / heads;
    auto per_prompt_stride = [&](const DeviceTensor& x, int64_t rows, const char* name) -> int64_t {
      if (x.dim(0) == rows) return 0;
      if (x.dim(0) != prompts * rows) {
        throw Error(std::string("mask decoder: attention ") + name + " has " + std::to_string(x.dim(0)) +
                    " rows, not " + std::to_string(rows) + " or " + std::to_string(prompts) + " x " +
                    std::to_string(rows));
      }
      return rows * width;
    };
    const int64_t q_stride = per_prompt_stride(q_in, nq, "q"), k_stride = per_prompt_stride(k_in, nk, "k"),
                  v_stride = per_prompt_stride(v_in, nk, "v");
    DeviceTensor q = backend.tensor({q_in.dim(0), width}), k = backend.tensor({k_in.dim(0), width}),
                 v = backend.tensor({v_in.dim(0), width});
    backend.linear_forward(q_proj, q_in, q_in.dim(0), q, Epilogue::none);
    backend.linear_forward(k_proj, k_in, k_in.dim(0), k, Epilogue::none);
    backend.linear_forward(v_proj, v_in, v_in.dim(0), v, Epilogue::none);
    DeviceTensor mixed = backend.tensor({prompts * nq, width});
    backend.attention({.nq = nq,
                       .nk = nk,
                       .heads = heads,
                       .head_dim = head_dim,
                       .q = q,
                       .k = k,
                       .v = v,
                       .out = mixed,
                       .ldq = width,
                       .ldk = width,
                       .ldv = width,
                       .ldo = width,
                       .scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim))),
                       .batches = prompts,
                       .q_batch_stride = q_stride,
                       .k_batch_stride = k_stride,
                       .v_batch_stride = v_stride,
                       .o_batch_stride = nq * width});
    DeviceTensor out = backend.tensor({prompts * nq, out_proj.out_features});
    backend.linear_forward(out_proj, mixed, prompts * nq, out, Epilogue::none);
    return out;
  }
};

// sam2_utils.MLP: ReLU between the layers, optional sigmoid on the output.
struct MaskDecoder::Mlp {
  std::vector<LinearHandle> layers;
  bool sigmoid_output = false;

  Mlp(Backend& backend, const WeightMap& weights, const std::string& prefix, int num_layers, bool sigmoid = false)
      : sigmoid_output(sigmoid) {
    for (int i = 0; i < num_layers; ++i) {
      layers.push_back(load_linear(backend, weights, prefix + ".layers." + std::to_string(i)));
    }
  }

  // x [rows, in] -> y [rows, out].
  void operator()(Backend& backend, const DeviceTensor& x, DeviceTensor& y) const {
    const int64_t rows = x.dim(0);
    DeviceTensor h = x;
    for (size_t i = 0; i + 1 < layers.size(); ++i) {
      DeviceTensor next = backend.tensor({rows, layers[i].out_features});
      backend.linear_forward(layers[i], h, rows, next, Epilogue::relu);
      h = next;
    }
    backend.linear_forward(layers.back(), h, rows, y, Epilogue::none);
    if (sigmoid_output) backend.sigmoid(y);
  }
};

struct LayerNormWeights {
  DeviceTensor weight, bias;
};

// One TwoWayAttentionBlock.
struct MaskDecoder::Block {
  Attention self_attn, cross_attn_token_to_image, cross_attn_image_to_token;
  LayerNormWeights norm1, norm2, norm3, norm4;
  Mlp mlp;
  bool skip_first_layer_pe = false;
};

DeviceDecoderFeatures upload_decoder_features(Backend& backend, const DecoderFeatures& features) {
  std::lock_guard lock(backend.run_mutex());
  // Written into persistent tensors rather than made constants: an image's
  // features are an upload per image (Backend::transfers counts them), not part of the model.
  auto upload = [&backend](const Tensor& nchw) {
    const Tensor hwc = nchw_to_hwc(nchw);
    DeviceTensor x = backend.persistent(hwc.shape());
    backend.write(x, hwc);
    return x;
  };
  return {upload(features.image_embed), upload(features.feat_s1), upload(features.feat_s0)};
}

MaskDecoder::MaskDecoder(const ModelConfig& config, const WeightMap& weights, const Tensor& image_pe,
                         const Tensor& no_mask_dense, std::shared_ptr<Backend> backend)
    : config_(config), num_mask_tokens_(config.num_multimask_outputs + 1), backend_(std::move(backend)) {
  if (backend_ == nullptr) throw Error("mask decoder: no backend");
  if (!config.use_high_res_features_in_sam || !config.pred_obj_scores || !config.pred_obj_scores_mlp) {
    throw Error("model config '" + config.name +
                "': the mask decoder needs use_high_res_features_in_sam, pred_obj_scores and pred_obj_scores_mlp "
                "(every SAM 2.1 checkpoint has them)");
  }
  Backend& b = *backend_;
  const std::string p = "sam_mask_decoder.";
  const int64_t c = config.embed_dim(), e = config.image_embedding_size();
  fixed_tokens_ = Tensor({2 + num_mask_tokens_, c});
  float* row = fixed_tokens_.data();
  row = std::copy_n(weights.at(p + "obj_score_token.weight").data(), c, row);
  row = std::copy_n(weights.at(p + "iou_token.weight").data(), c, row);
  std::copy_n(weights.at(p + "mask_tokens.weight").data(), num_mask_tokens_ * c, row);
  image_pe_ = b.constant(channels_last_rows(image_pe));
  no_mask_dense_ = b.constant(channels_last_rows(no_mask_dense));
  mask_downscaling_ = std::make_unique<DeviceMaskDownscaling>(config, weights, b);

  const std::string t = p + "transformer.";
  const int64_t heads = config.decoder_num_heads;
  auto norm = [&](const std::string& prefix) {
    return LayerNormWeights{b.constant(weights.at(prefix + ".weight")), b.constant(weights.at(prefix + ".bias"))};
  };
  for (int i = 0; i < config.decoder_depth; ++i) {
    const std::string l = t + "layers." + std::to_string(i);
    blocks_.push_back(Block{Attention(b, weights, l + ".self_attn", heads),
                            Attention(b, weights, l + ".cross_attn_token_to_image", heads),
                            Attention(b, weights, l + ".cross_attn_image_to_token", heads), norm(l + ".norm1"),
                            norm(l + ".norm2"), norm(l + ".norm3"), norm(l + ".norm4"), Mlp(b, weights, l + ".mlp", 2),
                            i == 0});
  }
  if (blocks_.empty()) throw Error("model config '" + config.name + "': decoder_depth must be at least 1");
  final_attention_ = std::make_unique<Attention>(b, weights, t + "final_attn_token_to_image", heads);
  const LayerNormWeights final_norm = norm(t + "norm_final_attn");
  final_norm_weight_ = final_norm.weight;
  final_norm_bias_ = final_norm.bias;

  upscale0_weight_ = b.constant(weights.at(p + "output_upscaling.0.weight"));
  upscale0_bias_ = b.constant(weights.at(p + "output_upscaling.0.bias"));
  upscale_norm_weight_ = b.constant(weights.at(p + "output_upscaling.1.weight"));
  upscale_norm_bias_ = b.constant(weights.at(p + "output_upscaling.1.bias"));
  upscale3_weight_ = b.constant(weights.at(p + "output_upscaling.3.weight"));
  upscale3_bias_ = b.constant(weights.at(p + "output_upscaling.3.bias"));
  for (int i = 0; i < num_mask_tokens_; ++i) {
    hypernetworks_.emplace_back(b, weights, p + "output_hypernetworks_mlps." + std::to_string(i), 3);
  }
  iou_head_ = std::make_unique<Mlp>(b, weights, p + "iou_prediction_head", config.iou_head_depth,
                                    config.iou_prediction_use_sigmoid);
  object_score_head_ = std::make_unique<Mlp>(b, weights, p + "pred_obj_score_head", 3);

  image_embed_ = b.persistent({e * e, c});
  src_ = b.persistent({e * e, c});
  feat_s1_ = b.persistent({2 * e, 2 * e, c / 4});
  feat_s0_ = b.persistent({4 * e, 4 * e, c / 8});
}

MaskDecoder::~MaskDecoder() = default;

void MaskDecoder::set_image(const DeviceDecoderFeatures& features) const {
  if (features.image_embed.shares_storage_with(image_.image_embed) &&
      features.feat_s1.shares_storage_with(image_.feat_s1) && features.feat_s0.shares_storage_with(image_.feat_s0)) {
    return;
  }
  const int64_t c = config_.embed_dim(), e = config_.image_embedding_size();
  auto check = [](const DeviceTensor& x, const Shape& want, const char* name) {
    if (x.shape() != want) {
      throw Error(std::string("mask decoder: ") + name + " has shape " + shape_to_string(x.shape()) +
                  ", expected " + shape_to_string(want) + " for this model config");
    }
  };
  check(features.image_embed, {e, e, c}, "image_embed");
  check(features.feat_s1, {2 * e, 2 * e, c / 4}, "feat_s1");
  check(features.feat_s0, {4 * e, 4 * e, c / 8}, "feat_s0");
  Backend& b = *backend_;
  run_once(b, [&] {
    b.copy(features.image_embed, image_embed_);
    // src = image_embed + dense (MaskDecoder.predict_masks), for every prompt without mask input.
    b.add(image_embed_, no_mask_dense_, src_);
    b.copy(features.feat_s1, feat_s1_);
    b.copy(features.feat_s0, feat_s0_);
  });
  image_ = features;
}

Tensor MaskDecoder::tokens(const Tensor& sparse) const {
  const int64_t c = config_.embed_dim(), num_sparse = sparse.numel() / c;
  if (sparse.numel() != num_sparse * c) {
    throw Error("mask decoder: sparse embeddings " + shape_to_string(sparse.shape()) + " are not rows of " +
                std::to_string(c));
  }
  // tokens = [obj_score, iou, mask_0..M-1, sparse prompts]
  Tensor tokens({fixed_tokens_.dim(0) + num_sparse, c});
  std::copy_n(sparse.data(), sparse.numel(), std::copy(fixed_tokens_.begin(), fixed_tokens_.end(), tokens.data()));
  return tokens;
}

void MaskDecoder::forward(Decode& decode, TransformerTrace* trace) const {
  Backend& b = *backend_;
  const int64_t c = config_.embed_dim(), e = config_.image_embedding_size(), pixels = e * e;
  const int64_t prompts = decode.prompts;
  const DeviceTensor& query_pe = decode.tokens;
  const int64_t t = query_pe.dim(0) / prompts;  // tokens per prompt
  const bool with_mask_inputs = !decode.mask_inputs.empty();
  if (with_mask_inputs) {
    // Each prompt's tokens and mask input, uploaded together, apart.
    const int64_t token_values = t * c, mask_values = decode.mask_inputs.numel() / prompts;
    const int64_t stride = token_values + mask_values;
    b.copy_rows(decode.inputs, 0, stride, decode.tokens, 0, token_values, token_values, prompts);
    b.copy_rows(decode.inputs, token_values, stride, decode.mask_inputs, 0, mask_values, mask_values, prompts);
  }
  // x + y; the larger first where one is a tensor all prompts share (their
  // keys before the first image update): float addition commutes, bit for bit.
  auto add = [&b](const DeviceTensor& x, const DeviceTensor& y) {
    const bool swap = y.numel() > x.numel();
    DeviceTensor sum = b.tensor(swap ? y.shape() : x.shape());
    b.add(swap ? y : x, swap ? x : y, sum);
    return sum;
  };
  // norm(x + y), the post-norm residual of every step of the transformer.
  auto add_norm = [&](const DeviceTensor& x, const DeviceTensor& y, const LayerNormWeights& norm) {
    const DeviceTensor sum = add(x, y);
    DeviceTensor normed = b.tensor(sum.shape());
    b.layer_norm_rows(sum, norm.weight, norm.bias, kTransformerLayerNormEps, normed);
    return normed;
  };

  // The two-way transformer (TwoWayTransformer.forward, TwoWayAttentionBlock),
  // over the rows of every prompt. The keys (image side) start as src, one
  // tensor the prompts share ([E*E, C]), and become each prompt's own ([B *
  // E*E, C]) at the first image-to-token update; with mask inputs they are
  // each prompt's from the start: image_embed plus its dense embedding.
  DeviceTensor queries = query_pe;
  DeviceTensor keys = src_;
  if (with_mask_inputs) keys = add(image_embed_, (*mask_downscaling_)(b, decode.mask_inputs));
  for (const Block& block : blocks_) {
    if (block.skip_first_layer_pe) {
      const DeviceTensor attended = block.self_attn(b, queries, queries, queries, prompts, t, t);
      DeviceTensor normed = b.tensor(queries.shape());
      b.layer_norm_rows(attended, block.norm1.weight, block.norm1.bias, kTransformerLayerNormEps, normed);
      queries = normed;
    } else {
      const DeviceTensor q = add(queries, query_pe);
      queries = add_norm(queries, block.self_attn(b, q, q, queries, prompts, t, t), block.norm1);
    }
    const DeviceTensor keys_pe = add(keys, image_pe_);
    queries = add_norm(queries,
                       block.cross_attn_token_to_image(b, add(queries, query_pe), keys_pe, keys, prompts, t, pixels),
                       block.norm2);
    DeviceTensor mlp_out = b.tensor(queries.shape());
    block.mlp(b, queries, mlp_out);
    queries = add_norm(queries, mlp_out, block.norm3);
    keys = add_norm(
        keys, block.cross_attn_image_to_token(b, keys_pe, add(queries, query_pe), queries, prompts, pixels, t),
        block.norm4);
    if (trace != nullptr) {
      trace->queries_after_block.push_back(b.download(queries));
      trace->keys_after_block.push_back(b.download(keys));
    }
  }
  const DeviceTensor keys_pe = add(keys, image_pe_);
  queries = add_norm(queries, (*final_attention_)(b, add(queries, query_pe), keys_pe, keys, prompts, t, pixels),
                     {final_norm_weight_, final_norm_bias_});
  if (trace != nullptr) trace->final_queries = b.download(queries);

  // The upscaling: act1(ln1(dc1(src) + feat_s1)), then act2(dc2(.) + feat_s0),
  // on the prompts' maps stacked along the height (a transposed 2x2 conv reads
  // only its own input pixel), each plus the same high-resolution features.
  const int64_t up1_c = upscale0_bias_.numel(), up_c = upscale3_bias_.numel(), l = 4 * e;
  DeviceTensor up1 = b.tensor({prompts * 2 * e, 2 * e, up1_c}), up1_normed = b.tensor(up1.shape());
  b.conv_transpose2x2(keys.reshaped({prompts * e, e, c}), upscale0_weight_, upscale0_bias_, feat_s1_, up1);
  b.layer_norm_rows(up1, upscale_norm_weight_, upscale_norm_bias_, kLayerNorm2dEps, up1_normed);
  b.gelu(up1_normed);
  DeviceTensor upscaled = b.tensor({prompts * l, l, up_c});
  b.conv_transpose2x2(up1_normed, upscale3_weight_, upscale3_bias_, feat_s0_, upscaled);
  b.gelu(upscaled);

  // The heads on the output tokens [obj_score, iou, mask_0..M-1, ...] of each prompt.
  auto token_rows = [&](int64_t row) {
    DeviceTensor x = b.tensor({prompts, c});
    b.copy_rows(queries, row * c, t * c, x, 0, c, c, prompts);
    return x;
  };
  const int64_t m = num_mask_tokens_;
  DeviceTensor hyper = b.tensor({prompts * m, up_c});
  for (int64_t i = 0; i < m; ++i) {
    DeviceTensor h = b.tensor({prompts, up_c});
    hypernetworks_[static_cast<size_t>(i)](b, token_rows(2 + i), h);
    b.copy_rows(h, 0, up_c, hyper, i * up_c, m * up_c, up_c, prompts);
  }
  DeviceTensor masks = b.tensor({prompts * m, l * l}), iou = b.tensor({prompts, m}),
               object_score = b.tensor({prompts, 1});
  b.matmul_transposed(hyper, upscaled.reshaped({prompts * l * l, up_c}), masks, prompts);
  (*iou_head_)(b, token_rows(1), iou);
  (*object_score_head_)(b, token_rows(0), object_score);
  // Packed for one download (a device copies a few MB faster than it makes another round trip).
  const int64_t packed = output_size();
  b.copy_rows(masks, 0, m * l * l, decode.outputs, 0, packed, m * l * l, prompts);
  b.copy_rows(iou, 0, m, decode.outputs, m * l * l, packed, m, prompts);
  b.copy_rows(object_score, 0, 1, decode.outputs, m * l * l + m, packed, 1, prompts);
  b.copy_rows(queries, 2 * c, t * c, decode.outputs, m * l * l + m + 1, packed, m * c, prompts);
}

int64_t MaskDecoder::output_size() const {
  const int64_t m = num_mask_tokens_, l = config_.low_res_mask_size();
  return m * l * l + m + 1 + m * config_.embed_dim();
}

MaskDecoderOutput MaskDecoder::unpack(const Tensor& outputs, int64_t prompt) const {
  const int64_t m = num_mask_tokens_, l = config_.low_res_mask_size(), first = prompt * output_size();
  MaskDecoderOutput out;
  out.masks = outputs.rows(first, m * l * l).reshaped({m, l, l});
  out.iou = outputs.rows(first + m * l * l, m);
  out.object_score_logit = outputs[first + m * l * l + m];
  out.mask_tokens_out = outputs.rows(first + m * l * l + m + 1, m * config_.embed_dim()).reshaped({m, config_.embed_dim()});
  return out;
}

Tensor MaskDecoder::decode(const DeviceDecoderFeatures& features, const Tensor& inputs, int64_t prompts,
                           int64_t tokens_per_prompt, bool with_mask_inputs, TransformerTrace* trace) const {
  const int64_t c = config_.embed_dim(), l = config_.low_res_mask_size();
  Backend& b = *backend_;
  std::lock_guard lock(b.run_mutex());
  set_image(features);
  // The tensors a decode reads its inputs into and writes its outputs to.
  auto allocate = [&](Decode& d, DeviceTensor uploaded) {
    d.prompts = prompts;
    d.inputs = std::move(uploaded);
    d.tokens = with_mask_inputs ? b.tensor({prompts * tokens_per_prompt, c}) : d.inputs;
    if (with_mask_inputs) d.mask_inputs = b.tensor({1, 1, prompts * l, l});
    d.outputs = b.tensor({prompts * output_size()});
  };
  Decode run_now;  // the CPU's: ops run when called
  Decode* decode = &run_now;
  if (b.records()) {
    const DecodeKey key{tokens_per_prompt, with_mask_inputs, prompts};
    Decode& recorded = decodes_[key];
    if (recorded.program == nullptr) {
      ScopedStage stage("decoder: record");
      b.begin_program();
      try {
        allocate(recorded, b.tensor(inputs.shape()));
        forward(recorded, nullptr);
      } catch (...) {
        b.end_program();
        decodes_.erase(key);
        throw;
      }
      recorded.program = b.end_program();
    }
    b.write(recorded.inputs, inputs);
    {
      ScopedStage stage("decoder on device");
      b.run(*recorded.program);
    }
    last_ops_ = recorded.program->stats();
    decode = &recorded;
  } else {
    const int64_t ops_before = b.ops_called();
    allocate(run_now, b.input(inputs));
    forward(run_now, trace);
    last_ops_ = {b.ops_called() - ops_before, 0, 0};
  }
  ScopedStage stage("decoder: download");
  return b.download(decode->outputs);
}

MaskDecoderOutput MaskDecoder::predict_masks(const DeviceDecoderFeatures& features, const Tensor& sparse,
                                             const Tensor& mask_input) const {
  return predict_masks_batch(features, {sparse},
                             mask_input.empty() ? std::vector<Tensor>{} : std::vector<Tensor>{mask_input})
      .front();
}

MaskDecoderOutput MaskDecoder::predict_masks_traced(const DeviceDecoderFeatures& features, const Tensor& sparse,
                                                    TransformerTrace& trace) const {
  if (backend_->records()) throw Error("mask decoder: a traced decode needs a backend that runs ops when called");
  trace = {};
  const Tensor rows = tokens(sparse);
  return unpack(decode(features, rows, 1, rows.dim(0), false, &trace), 0);
}

std::vector<MaskDecoderOutput> MaskDecoder::predict_masks_batch(const DeviceDecoderFeatures& features,
                                                                const std::vector<Tensor>& sparse,
                                                                const std::vector<Tensor>& mask_inputs) const {
  std::vector<MaskDecoderOutput> results;
  if (sparse.empty()) return results;
  for (const Tensor& prompt : sparse) {
    if (prompt.numel() != sparse.front().numel()) {
      throw Error("mask decoder: a batch's prompts need one token count; sparse embeddings " +
                  shape_to_string(prompt.shape()) + " and " + shape_to_string(sparse.front().shape()));
    }
  }
  const bool with_mask_inputs = !mask_inputs.empty();
  const int64_t l = config_.low_res_mask_size();
  if (with_mask_inputs && mask_inputs.size() != sparse.size()) {
    throw Error("mask decoder: " + std::to_string(mask_inputs.size()) + " mask inputs for " +
                std::to_string(sparse.size()) + " prompts");
  }
  for (const Tensor& mask : mask_inputs) {
    if (mask.shape() != Shape{1, l, l}) {
      throw Error("mask decoder: a mask input has shape " + shape_to_string(mask.shape()) + ", expected " +
                  shape_to_string({1, l, l}));
    }
  }
  const int64_t total = static_cast<int64_t>(sparse.size()), cap = max_prompts_per_batch();
  const int64_t batches = (total + cap - 1) / cap, base = total / batches, longer = total % batches;
  results.reserve(sparse.size());
  for (int64_t k = 0, first = 0; k < batches; ++k) {
    const int64_t prompts = base + (k < longer ? 1 : 0);
    const Tensor first_rows = tokens(sparse[static_cast<size_t>(first)]);
    const int64_t t = first_rows.dim(0);
    const int64_t token_values = t * config_.embed_dim(), mask_values = with_mask_inputs ? l * l : 0;
    // Per prompt its tokens, then its mask input (Decode::inputs).
    Tensor inputs = with_mask_inputs ? Tensor({prompts * (token_values + mask_values)})
                                     : Tensor({prompts * t, config_.embed_dim()});
    for (int64_t i = 0; i < prompts; ++i) {
      const size_t p = static_cast<size_t>(first + i);
      const Tensor rows = i == 0 ? first_rows : tokens(sparse[p]);
      float* at = std::copy(rows.begin(), rows.end(), inputs.data() + i * (token_values + mask_values));
      if (with_mask_inputs) std::copy(mask_inputs[p].begin(), mask_inputs[p].end(), at);
    }
    const Tensor outputs = decode(features, inputs, prompts, t, with_mask_inputs);
    for (int64_t i = 0; i < prompts; ++i) results.push_back(unpack(outputs, i));
    first += prompts;
  }
  return results;
}

int64_t MaskDecoder::max_prompts_per_batch() const {
  const int64_t c = config_.embed_dim(), e = config_.image_embedding_size(), l = config_.low_res_mask_size();
  const int64_t up1_c = upscale0_bias_.numel(), up_c = upscale3_bias_.numel(), m = num_mask_tokens_;
  // One prompt's share of a batch's largest tensors, which ops such as the
  // attentions and the upscaling take whole.
  const int64_t largest = std::max({e * e * c, 4 * e * e * up1_c, l * l * up_c, output_size()});
  // What a prompt holds at a program's peak, about: a few image-side maps of
  // the transformer (keys, their sum with the encoding, projections, the
  // attention's output), then the upscaled maps and the masks.
  const int64_t per_prompt_bytes =
      static_cast<int64_t>(sizeof(float)) * (8 * e * e * c + 8 * e * e * up1_c + l * l * up_c + 2 * m * l * l);
  const int64_t by_binding = backend_->max_whole_tensor_elements() / largest;
  const int64_t by_memory = kBatchMemoryBytes / per_prompt_bytes;
  return std::max<int64_t>(1, std::min({kMaxPromptsPerBatch, by_binding, by_memory}));
}

ProgramStats MaskDecoder::last_ops() const {
  std::lock_guard lock(backend_->run_mutex());
  return last_ops_;
}

}  // namespace sam2rt
