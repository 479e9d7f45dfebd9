#include "model/prompt_encoder.h"

#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/activation.h"
#include "kernels/norm.h"
#include "kernels/patch_conv.h"

namespace sam2rt {

namespace {

constexpr float kLayerNorm2dEps = 1e-6f;

// SAM2Transforms.transform_coords(normalize=True): x / W * S, in float32 like the official code.
float to_model_frame(float v, int orig_size, int image_size) {
  const float normalized = v / static_cast<float>(orig_size);
  return normalized * static_cast<float>(image_size);
}

}  // namespace

PromptEncoder::PromptEncoder(const ModelConfig& config, const WeightMap& weights) : config_(config) {
  const std::string p = "sam_prompt_encoder.";
  gaussian_matrix_ = weights.at(p + "pe_layer.positional_encoding_gaussian_matrix");
  for (int i = 0; i < 4; ++i) point_embeddings_[i] = weights.at(p + "point_embeddings." + std::to_string(i) + ".weight");
  not_a_point_embed_ = weights.at(p + "not_a_point_embed.weight");
  no_mask_embed_ = weights.at(p + "no_mask_embed.weight");
  const std::string d = p + "mask_downscaling.";
  down0_w_ = weights.at(d + "0.weight");
  down0_b_ = weights.at(d + "0.bias");
  norm1_w_ = weights.at(d + "1.weight");
  norm1_b_ = weights.at(d + "1.bias");
  down3_w_ = weights.at(d + "3.weight");
  down3_b_ = weights.at(d + "3.bias");
  norm4_w_ = weights.at(d + "4.weight");
  norm4_b_ = weights.at(d + "4.bias");
  down6_w_ = weights.at(d + "6.weight");
  down6_b_ = weights.at(d + "6.bias");
}

void PromptEncoder::encode_position(float x01, float y01, float* out) const {
  const int64_t half = gaussian_matrix_.dim(1);
  // 2c - 1 happens on the float32 coordinates; the projection runs in double like the reference.
  const double cx = 2.0f * x01 - 1.0f;
  const double cy = 2.0f * y01 - 1.0f;
  for (int64_t k = 0; k < half; ++k) {
    const double projected = cx * gaussian_matrix_[k] + cy * gaussian_matrix_[half + k];
    const double angle = 2.0 * std::numbers::pi * projected;
    out[k] = static_cast<float>(std::sin(angle));
    out[half + k] = static_cast<float>(std::cos(angle));
  }
}

Tensor PromptEncoder::dense_pe() const {
  const int64_t e = config_.image_embedding_size(), c = config_.embed_dim(), half = gaussian_matrix_.dim(1);
  // Pixel centres of the E x E grid, normalised to [0, 1] (cumsum - 0.5, / size) in float32,
  // then mapped to [-1, 1] on the float32 values as encode_position does.
  auto centre = [e](int64_t i) {
    const float x01 = (static_cast<float>(i + 1) - 0.5f) / static_cast<float>(e);
    return static_cast<double>(2.0f * x01 - 1.0f);
  };
  // The angle 2 pi (cx g0[k] + cy g1[k]) splits into a column part and a row
  // part, so E x C/2 sines and cosines of each (angle addition in double) replace
  // E^2 x C/2 of the full angle.
  std::vector<double> col_sin(static_cast<size_t>(e * half)), col_cos(col_sin.size());
  std::vector<double> row_sin(col_sin.size()), row_cos(col_sin.size());
  for (int64_t i = 0; i < e; ++i)
    for (int64_t k = 0; k < half; ++k) {
      const size_t at = static_cast<size_t>(i * half + k);
      const double col_angle = 2.0 * std::numbers::pi * (centre(i) * gaussian_matrix_[k]);
      const double row_angle = 2.0 * std::numbers::pi * (centre(i) * gaussian_matrix_[half + k]);
      col_sin[at] = std::sin(col_angle);
      col_cos[at] = std::cos(col_angle);
      row_sin[at] = std::sin(row_angle);
      row_cos[at] = std::cos(row_angle);
    }
  Tensor pe({1, c, e, e});
  for (int64_t k = 0; k < half; ++k) {
    float* sin_plane = pe.data() + k * e * e;
    float* cos_plane = pe.data() + (half + k) * e * e;
    for (int64_t i = 0; i < e; ++i) {
      const double rs = row_sin[static_cast<size_t>(i * half + k)], rc = row_cos[static_cast<size_t>(i * half + k)];
      for (int64_t j = 0; j < e; ++j) {
        const double cs = col_sin[static_cast<size_t>(j * half + k)], cc = col_cos[static_cast<size_t>(j * half + k)];
        sin_plane[i * e + j] = static_cast<float>(cs * rc + cc * rs);
        cos_plane[i * e + j] = static_cast<float>(cc * rc - cs * rs);
      }
    }
  }
  return pe;
}

int PromptEncoder::sparse_token_count(const Prompt& prompt) {
  const int n = static_cast<int>(prompt.points.size()) + (prompt.box ? 2 : 0);
  return n == 0 ? 0 : n + 1;
}

Tensor PromptEncoder::embed_sparse(const Prompt& prompt, int orig_w, int orig_h) const {
  const int s = config_.image_size;
  std::vector<ModelPoint> points;
  if (prompt.box) {
    const auto& b = *prompt.box;
    points.push_back({to_model_frame(b[0], orig_w, s), to_model_frame(b[1], orig_h, s), 2});
    points.push_back({to_model_frame(b[2], orig_w, s), to_model_frame(b[3], orig_h, s), 3});
  }
  for (const PointPrompt& p : prompt.points) {
    points.push_back({to_model_frame(p.x, orig_w, s), to_model_frame(p.y, orig_h, s), p.label});
  }
  if (points.empty()) return Tensor({1, 0, config_.embed_dim()});
  return embed_points(points);
}

Tensor PromptEncoder::embed_points(const std::vector<ModelPoint>& points) const {
  const int s = config_.image_size;
  const int64_t c = config_.embed_dim();
  Tensor sparse({1, static_cast<int64_t>(points.size()) + 1, c});
  for (size_t n = 0; n <= points.size(); ++n) {
    float* out = sparse.data() + static_cast<int64_t>(n) * c;
    const ModelPoint p = n < points.size() ? points[n] : ModelPoint{};
    if (p.label < -1 || p.label > 3) throw Error("prompt point label " + std::to_string(p.label) + " is not -1, 0, 1, 2 or 3");
    if (p.label == -1) {
      for (int64_t k = 0; k < c; ++k) out[k] = not_a_point_embed_[k];
      continue;
    }
    // Shift to the pixel centre, then normalise by the model input size (float32).
    const float x01 = (p.x + 0.5f) / static_cast<float>(s);
    const float y01 = (p.y + 0.5f) / static_cast<float>(s);
    encode_position(x01, y01, out);
    const Tensor& label_embed = point_embeddings_[p.label];
    for (int64_t k = 0; k < c; ++k) out[k] += label_embed[k];
  }
  return sparse;
}

Tensor PromptEncoder::embed_dense(const Prompt& prompt) const {
  const int64_t e = config_.image_embedding_size(), c = config_.embed_dim();
  if (prompt.mask_input.empty()) {
    Tensor dense({1, c, e, e});
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t i = 0; i < e * e; ++i) dense[ch * e * e + i] = no_mask_embed_[ch];
    return dense;
  }
  const int64_t l = config_.low_res_mask_size();
  Tensor x = prompt.mask_input.reshaped({1, 1, l, l});
  x = layer_norm_2d(patch_conv(x, down0_w_, down0_b_), norm1_w_, norm1_b_, kLayerNorm2dEps);
  gelu_inplace(x);
  x = layer_norm_2d(patch_conv(x, down3_w_, down3_b_), norm4_w_, norm4_b_, kLayerNorm2dEps);
  gelu_inplace(x);
  return patch_conv(x, down6_w_, down6_b_);
}

}  // namespace sam2rt
