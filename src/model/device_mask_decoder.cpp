#include "model/device_mask_decoder.h"

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
struct DeviceMaskDecoder::Attention {
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

  // q [nq, C], k and v [nk, C] -> [nq, C].
  DeviceTensor operator()(Backend& backend, const DeviceTensor& q_in, const DeviceTensor& k_in,
                          const DeviceTensor& v_in) const {
    const int64_t nq = q_in.dim(0), nk = k_in.dim(0), width = q_proj.out_features, head_dim = width / heads;
    DeviceTensor q = backend.tensor({nq, width}), k = backend.tensor({nk, width}), v = backend.tensor({nk, width});
    backend.linear_forward(q_proj, q_in, nq, q, Epilogue::none);
    backend.linear_forward(k_proj, k_in, nk, k, Epilogue::none);
    backend.linear_forward(v_proj, v_in, nk, v, Epilogue::none);
    DeviceTensor mixed = backend.tensor({nq, width});
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
                       .scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)))});
    DeviceTensor out = backend.tensor({nq, out_proj.out_features});
    backend.linear_forward(out_proj, mixed, nq, out, Epilogue::none);
    return out;
  }
};

// sam2_utils.MLP: ReLU between the layers, optional sigmoid on the output.
struct DeviceMaskDecoder::Mlp {
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
struct DeviceMaskDecoder::Block {
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

DeviceMaskDecoder::DeviceMaskDecoder(const ModelConfig& config, const WeightMap& weights, const Tensor& image_pe,
                                     const Tensor& no_mask_dense, std::shared_ptr<Backend> backend)
    : config_(config), num_mask_tokens_(config.num_multimask_outputs + 1), backend_(std::move(backend)) {
  if (backend_ == nullptr) throw Error("device mask decoder: no backend");
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

DeviceMaskDecoder::~DeviceMaskDecoder() = default;

void DeviceMaskDecoder::set_image(const DeviceDecoderFeatures& features) const {
  if (features.image_embed.shares_storage_with(image_.image_embed) &&
      features.feat_s1.shares_storage_with(image_.feat_s1) && features.feat_s0.shares_storage_with(image_.feat_s0)) {
    return;
  }
  const int64_t c = config_.embed_dim(), e = config_.image_embedding_size();
  auto check = [](const DeviceTensor& x, const Shape& want, const char* name) {
    if (x.shape() != want) {
      throw Error(std::string("device mask decoder: ") + name + " has shape " + shape_to_string(x.shape()) +
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

Tensor DeviceMaskDecoder::tokens(const Tensor& sparse) const {
  const int64_t c = config_.embed_dim(), num_sparse = sparse.numel() / c;
  if (sparse.numel() != num_sparse * c) {
    throw Error("device mask decoder: sparse embeddings " + shape_to_string(sparse.shape()) + " are not rows of " +
                std::to_string(c));
  }
  // tokens = [obj_score, iou, mask_0..M-1, sparse prompts]
  Tensor tokens({fixed_tokens_.dim(0) + num_sparse, c});
  std::copy_n(sparse.data(), sparse.numel(), std::copy(fixed_tokens_.begin(), fixed_tokens_.end(), tokens.data()));
  return tokens;
}

void DeviceMaskDecoder::forward(Decode& decode) const {
  Backend& b = *backend_;
  const int64_t c = config_.embed_dim(), e = config_.image_embedding_size();
  const DeviceTensor& query_pe = decode.tokens;
  const int64_t t = query_pe.dim(0);
  auto add = [&b](const DeviceTensor& x, const DeviceTensor& y) {
    DeviceTensor sum = b.tensor(x.shape());
    b.add(x, y, sum);
    return sum;
  };
  // norm(x + y), the post-norm residual of every step of the transformer.
  auto add_norm = [&](const DeviceTensor& x, const DeviceTensor& y, const LayerNormWeights& norm) {
    const DeviceTensor sum = add(x, y);
    DeviceTensor normed = b.tensor(x.shape());
    b.layer_norm_rows(sum, norm.weight, norm.bias, kTransformerLayerNormEps, normed);
    return normed;
  };

  // The two-way transformer (TwoWayTransformer.forward, TwoWayAttentionBlock).
  DeviceTensor queries = query_pe;
  DeviceTensor keys = src_;
  if (!decode.mask_dense.empty()) keys = add(image_embed_, decode.mask_dense);
  for (const Block& block : blocks_) {
    if (block.skip_first_layer_pe) {
      const DeviceTensor attended = block.self_attn(b, queries, queries, queries);
      DeviceTensor normed = b.tensor({t, c});
      b.layer_norm_rows(attended, block.norm1.weight, block.norm1.bias, kTransformerLayerNormEps, normed);
      queries = normed;
    } else {
      const DeviceTensor q = add(queries, query_pe);
      queries = add_norm(queries, block.self_attn(b, q, q, queries), block.norm1);
    }
    const DeviceTensor keys_pe = add(keys, image_pe_);
    queries = add_norm(queries, block.cross_attn_token_to_image(b, add(queries, query_pe), keys_pe, keys), block.norm2);
    DeviceTensor mlp_out = b.tensor({t, c});
    block.mlp(b, queries, mlp_out);
    queries = add_norm(queries, mlp_out, block.norm3);
    keys = add_norm(keys, block.cross_attn_image_to_token(b, keys_pe, add(queries, query_pe), queries), block.norm4);
  }
  const DeviceTensor keys_pe = add(keys, image_pe_);
  queries = add_norm(queries, (*final_attention_)(b, add(queries, query_pe), keys_pe, keys),
                     {final_norm_weight_, final_norm_bias_});

  // The upscaling: act1(ln1(dc1(src) + feat_s1)), then act2(dc2(.) + feat_s0).
  const int64_t up1_c = upscale0_bias_.numel(), up_c = upscale3_bias_.numel(), l = 4 * e;
  DeviceTensor up1 = b.tensor({2 * e, 2 * e, up1_c}), up1_normed = b.tensor({2 * e, 2 * e, up1_c});
  b.conv_transpose2x2(keys.reshaped({e, e, c}), upscale0_weight_, upscale0_bias_, feat_s1_, up1);
  b.layer_norm_rows(up1, upscale_norm_weight_, upscale_norm_bias_, kLayerNorm2dEps, up1_normed);
  b.gelu(up1_normed);
  DeviceTensor upscaled = b.tensor({l, l, up_c});
  b.conv_transpose2x2(up1_normed, upscale3_weight_, upscale3_bias_, feat_s0_, upscaled);
  b.gelu(upscaled);

  // The heads on the output tokens [obj_score, iou, mask_0..M-1, ...].
  auto token_row = [&](int64_t row) {
    DeviceTensor x = b.tensor({1, c});
    b.copy_elements(queries, row * c, x, 0, c);
    return x;
  };
  const int64_t m = num_mask_tokens_;
  DeviceTensor hyper = b.tensor({m, up_c});
  for (int64_t i = 0; i < m; ++i) {
    DeviceTensor h = b.tensor({1, up_c});
    hypernetworks_[static_cast<size_t>(i)](b, token_row(2 + i), h);
    b.copy_elements(h, 0, hyper, i * up_c, up_c);
  }
  DeviceTensor masks = b.tensor({m, l * l}), iou = b.tensor({1, m}), object_score = b.tensor({1, 1});
  b.matmul_transposed(hyper, upscaled.reshaped({l * l, up_c}), masks);
  (*iou_head_)(b, token_row(1), iou);
  (*object_score_head_)(b, token_row(0), object_score);
  // Packed for one download (a device copies a few MB faster than it makes another round trip).
  b.copy_elements(masks, 0, decode.outputs, 0, m * l * l);
  b.copy_elements(iou, 0, decode.outputs, m * l * l, m);
  b.copy_elements(object_score, 0, decode.outputs, m * l * l + m, 1);
}

MaskDecoderOutput DeviceMaskDecoder::predict_masks(const DeviceDecoderFeatures& features, const Tensor& sparse,
                                                   const Tensor& mask_dense) const {
  const Tensor prompt_tokens = tokens(sparse);
  const int64_t t = prompt_tokens.dim(0), m = num_mask_tokens_, l = config_.low_res_mask_size();
  const int64_t c = config_.embed_dim(), e = config_.image_embedding_size();
  const bool has_mask = !mask_dense.empty();
  if (has_mask && mask_dense.shape() != Shape{1, c, e, e}) {
    throw Error("device mask decoder: the dense embedding has shape " + shape_to_string(mask_dense.shape()) +
                ", expected " + shape_to_string({1, c, e, e}));
  }
  const Tensor dense_rows = has_mask ? channels_last_rows(mask_dense) : Tensor();
  Backend& b = *backend_;
  std::lock_guard lock(b.run_mutex());
  set_image(features);
  auto make_outputs = [&](Decode& d) { d.outputs = b.tensor({m * l * l + m + 1}); };
  Decode run_now;  // the CPU's: ops run when called
  Decode* decode = &run_now;
  if (b.records()) {
    const std::pair key{t, has_mask};
    Decode& recorded = decodes_[key];
    if (recorded.program == nullptr) {
      ScopedStage stage("decoder: record");
      b.begin_program();
      try {
        recorded.tokens = b.tensor({t, c});
        if (has_mask) recorded.mask_dense = b.tensor({e * e, c});
        make_outputs(recorded);
        forward(recorded);
      } catch (...) {
        b.end_program();
        decodes_.erase(key);
        throw;
      }
      recorded.program = b.end_program();
    }
    b.write(recorded.tokens, prompt_tokens);
    if (has_mask) b.write(recorded.mask_dense, dense_rows);
    {
      ScopedStage stage("decoder on device");
      b.run(*recorded.program);
    }
    last_ops_ = recorded.program->stats();
    decode = &recorded;
  } else {
    const int64_t ops_before = b.ops_called();
    run_now.tokens = b.input(prompt_tokens);
    if (has_mask) run_now.mask_dense = b.input(dense_rows);
    make_outputs(run_now);
    forward(run_now);
    last_ops_ = {b.ops_called() - ops_before, 0, 0};
  }
  ScopedStage stage("decoder: download");
  const Tensor outputs = b.download(decode->outputs);
  MaskDecoderOutput out;
  out.masks = outputs.rows(0, m * l * l).reshaped({m, l, l});
  out.iou = outputs.rows(m * l * l, m);
  out.object_score_logit = outputs[m * l * l + m];
  return out;
}

ProgramStats DeviceMaskDecoder::last_ops() const {
  std::lock_guard lock(backend_->run_mutex());
  return last_ops_;
}

}  // namespace sam2rt
