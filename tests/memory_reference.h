#pragma once

// Plain double-precision references of the video memory modules, written from
// the official modules' definitions (memory_encoder.py, memory_attention.py,
// transformer.RoPEAttention) as loops over channels-last maps, sharing nothing
// with the engine's kernels or model code. The memory tests compare with them.

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "core/weights.h"
#include "model/config.h"

namespace sam2rt::testing::memory_reference {

using Map = std::vector<double>;  // [H, W, C] or [rows, C]

inline double gelu(double v) { return 0.5 * v * std::erfc(-v / std::sqrt(2.0)); }

// nn.Conv2d on a channels-last map, weight [out, in / groups, k, k].
inline Map conv(const Map& x, int64_t height, int64_t width, int64_t in, const Tensor& weight, const Tensor& bias,
                int64_t stride, int64_t padding, int64_t groups, int64_t& out_height, int64_t& out_width) {
  const int64_t out = weight.dim(0), kernel = weight.dim(3), per_group_in = in / groups, per_group_out = out / groups;
  out_height = (height + 2 * padding - kernel) / stride + 1;
  out_width = (width + 2 * padding - kernel) / stride + 1;
  Map y(static_cast<size_t>(out_height * out_width * out));
  for (int64_t oy = 0; oy < out_height; ++oy) {
    for (int64_t ox = 0; ox < out_width; ++ox) {
      for (int64_t o = 0; o < out; ++o) {
        const int64_t group = o / per_group_out;
        double sum = bias[o];
        for (int64_t i = 0; i < per_group_in; ++i) {
          for (int64_t ky = 0; ky < kernel; ++ky) {
            for (int64_t kx = 0; kx < kernel; ++kx) {
              const int64_t iy = oy * stride - padding + ky, ix = ox * stride - padding + kx;
              if (iy < 0 || iy >= height || ix < 0 || ix >= width) continue;
              sum += x[static_cast<size_t>((iy * width + ix) * in + group * per_group_in + i)] *
                     weight[((o * per_group_in + i) * kernel + ky) * kernel + kx];
            }
          }
        }
        y[static_cast<size_t>((oy * out_width + ox) * out + o)] = sum;
      }
    }
  }
  return y;
}

// LayerNorm over the last dimension (width) of every row.
inline void layer_norm(Map& x, int64_t width, const Tensor& weight, const Tensor& bias, double eps) {
  for (size_t row = 0; row < x.size(); row += static_cast<size_t>(width)) {
    double mean = 0.0, variance = 0.0;
    for (int64_t i = 0; i < width; ++i) mean += x[row + static_cast<size_t>(i)];
    mean /= static_cast<double>(width);
    for (int64_t i = 0; i < width; ++i) variance += std::pow(x[row + static_cast<size_t>(i)] - mean, 2);
    variance /= static_cast<double>(width);
    for (int64_t i = 0; i < width; ++i) {
      double& v = x[row + static_cast<size_t>(i)];
      v = (v - mean) / std::sqrt(variance + eps) * weight[i] + bias[i];
    }
  }
}

// y [rows, out] = x [rows, in] W^T + b, W [out, in] (or [out, in, 1, 1]).
inline Map linear(const Map& x, const Tensor& weight, const Tensor& bias) {
  const int64_t out = weight.dim(0), in = weight.numel() / out, rows = static_cast<int64_t>(x.size()) / in;
  Map y(static_cast<size_t>(rows * out));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < out; ++o) {
      double sum = bias[o];
      for (int64_t i = 0; i < in; ++i) sum += x[static_cast<size_t>(r * in + i)] * weight[o * in + i];
      y[static_cast<size_t>(r * out + o)] = sum;
    }
  }
  return y;
}

inline Map to_map(const Tensor& t) { return Map(t.begin(), t.end()); }

inline Tensor to_tensor(const Map& m, Shape shape) {
  Tensor t(std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t[i] = static_cast<float>(m[static_cast<size_t>(i)]);
  return t;
}

// MemoryEncoder.forward(pix_feat, mask, skip_mask_sigmoid=True), plus
// no_obj_embed_spatial when the object is absent: [E*E, mem_dim].
inline Tensor memory_encoder(const ModelConfig& config, const WeightMap& w, const Tensor& pix_feat, const Tensor& mask,
                             bool object_absent) {
  const MemoryEncoderConfig& e = config.memory_encoder;
  const std::string p = "memory_encoder.";
  int64_t height = config.image_size, width = config.image_size, channels = 1;
  Map m = to_map(mask);
  int index = 0;
  for (int stride = 1; stride < e.downsampler_total_stride; stride *= e.downsampler_stride, index += 3) {
    const std::string conv_key = p + "mask_downsampler.encoder." + std::to_string(index);
    const std::string norm_key = p + "mask_downsampler.encoder." + std::to_string(index + 1);
    int64_t oh = 0, ow = 0;
    m = conv(m, height, width, channels, w.at(conv_key + ".weight"), w.at(conv_key + ".bias"), e.downsampler_stride,
             e.downsampler_padding, 1, oh, ow);
    height = oh;
    width = ow;
    channels = w.at(conv_key + ".bias").numel();
    layer_norm(m, channels, w.at(norm_key + ".weight"), w.at(norm_key + ".bias"), 1e-6);
    for (double& v : m) v = gelu(v);
  }
  const std::string last = p + "mask_downsampler.encoder." + std::to_string(index);
  m = linear(m, w.at(last + ".weight"), w.at(last + ".bias"));
  const int64_t c = config.embed_dim();
  Map x = linear(to_map(pix_feat), w.at(p + "pix_feat_proj.weight"), w.at(p + "pix_feat_proj.bias"));
  for (size_t i = 0; i < x.size(); ++i) x[i] += m[i];
  for (int j = 0; j < e.fuser_num_layers; ++j) {
    const std::string b = p + "fuser.layers." + std::to_string(j) + ".";
    int64_t oh = 0, ow = 0;
    Map h =
        conv(x, height, width, c, w.at(b + "dwconv.weight"), w.at(b + "dwconv.bias"), 1, e.fuser_padding, c, oh, ow);
    layer_norm(h, c, w.at(b + "norm.weight"), w.at(b + "norm.bias"), 1e-6);
    h = linear(h, w.at(b + "pwconv1.weight"), w.at(b + "pwconv1.bias"));
    for (double& v : h) v = gelu(v);
    h = linear(h, w.at(b + "pwconv2.weight"), w.at(b + "pwconv2.bias"));
    const Tensor& gamma = w.at(b + "gamma");
    for (size_t i = 0; i < x.size(); ++i) x[i] += gamma[static_cast<int64_t>(i) % c] * h[i];
  }
  if (e.out_dim != e.in_dim) x = linear(x, w.at(p + "out_proj.weight"), w.at(p + "out_proj.bias"));
  if (object_absent) {
    const Tensor& embed = w.at("no_obj_embed_spatial");
    for (size_t i = 0; i < x.size(); ++i) x[i] += embed[static_cast<int64_t>(i) % e.out_dim];
  }
  return to_tensor(x, {height * width, e.out_dim});
}

// RoPE of rows [n, heads * head_dim] in place: row r at grid position
// (r % pixels) % side, (r % pixels) / side; pairs of the first head_dim / 4 by
// the x angle, of the rest by the y angle, freq_j = theta^(-4j / head_dim).
inline void rotate(Map& x, int64_t rows, int64_t width, int64_t heads, int64_t side, double theta) {
  const int64_t head_dim = width / heads, quarter = head_dim / 4;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t t = r % (side * side);
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t i = 0; i < head_dim / 2; ++i) {
        const int64_t j = i % quarter;
        const double position = static_cast<double>(i < quarter ? t % side : t / side);
        const double angle = position / std::pow(theta, static_cast<double>(4 * j) / static_cast<double>(head_dim));
        double& re = x[static_cast<size_t>(r * width + h * head_dim + 2 * i)];
        double& im = x[static_cast<size_t>(r * width + h * head_dim + 2 * i + 1)];
        const double a = re, b = im;
        re = a * std::cos(angle) - b * std::sin(angle);
        im = a * std::sin(angle) + b * std::cos(angle);
      }
    }
  }
}

// One RoPEAttention with its output projection.
inline Map rope_attention(const WeightMap& w, const std::string& p, const Map& q_in, const Map& k_in, const Map& v_in,
                          int64_t rotated_keys, int64_t heads, int64_t side, double theta) {
  Map q = linear(q_in, w.at(p + ".q_proj.weight"), w.at(p + ".q_proj.bias"));
  Map k = linear(k_in, w.at(p + ".k_proj.weight"), w.at(p + ".k_proj.bias"));
  Map v = linear(v_in, w.at(p + ".v_proj.weight"), w.at(p + ".v_proj.bias"));
  const int64_t width = w.at(p + ".q_proj.weight").dim(0), nq = static_cast<int64_t>(q.size()) / width,
                nk = static_cast<int64_t>(k.size()) / width, head_dim = width / heads;
  rotate(q, nq, width, heads, side, theta);
  rotate(k, rotated_keys, width, heads, side, theta);
  Map mixed(q.size());
  std::vector<double> scores(static_cast<size_t>(nk));
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t i = 0; i < nq; ++i) {
      double largest = -INFINITY;
      for (int64_t j = 0; j < nk; ++j) {
        double dot = 0.0;
        for (int64_t d = 0; d < head_dim; ++d) {
          dot += q[static_cast<size_t>(i * width + h * head_dim + d)] *
                 k[static_cast<size_t>(j * width + h * head_dim + d)];
        }
        scores[static_cast<size_t>(j)] = dot / std::sqrt(static_cast<double>(head_dim));
        largest = std::max(largest, scores[static_cast<size_t>(j)]);
      }
      double total = 0.0;
      for (double& s : scores) total += (s = std::exp(s - largest));
      for (int64_t d = 0; d < head_dim; ++d) {
        double sum = 0.0;
        for (int64_t j = 0; j < nk; ++j) {
          sum += scores[static_cast<size_t>(j)] * v[static_cast<size_t>(j * width + h * head_dim + d)];
        }
        mixed[static_cast<size_t>(i * width + h * head_dim + d)] = sum / total;
      }
    }
  }
  return linear(mixed, w.at(p + ".out_proj.weight"), w.at(p + ".out_proj.bias"));
}

// MemoryAttention.forward for one frame: [E*E, C].
inline Tensor memory_attention(const ModelConfig& config, const WeightMap& w, const Tensor& curr,
                               const Tensor& curr_pos, const Tensor& memory, const Tensor& memory_pos,
                               int64_t num_obj_ptr_tokens) {
  const MemoryAttentionConfig& a = config.memory_attention;
  const int64_t c = config.embed_dim(), side = config.image_embedding_size();
  const int64_t rotated_keys = memory.numel() / config.mem_dim() - num_obj_ptr_tokens;
  Map x = to_map(curr);
  for (size_t i = 0; i < x.size(); ++i) x[i] += 0.1 * curr_pos[static_cast<int64_t>(i)];
  Map keys = to_map(memory);
  for (size_t i = 0; i < keys.size(); ++i) keys[i] += memory_pos[static_cast<int64_t>(i)];
  const Map values = to_map(memory);
  for (int l = 0; l < a.num_layers; ++l) {
    const std::string p = "memory_attention.layers." + std::to_string(l);
    Map t = x;
    layer_norm(t, c, w.at(p + ".norm1.weight"), w.at(p + ".norm1.bias"), 1e-5);
    Map update = rope_attention(w, p + ".self_attn", t, t, t, static_cast<int64_t>(t.size()) / c,
                                a.self_attention.num_heads, side, a.self_attention.rope_theta);
    for (size_t i = 0; i < x.size(); ++i) x[i] += update[i];
    t = x;
    layer_norm(t, c, w.at(p + ".norm2.weight"), w.at(p + ".norm2.bias"), 1e-5);
    update = rope_attention(w, p + ".cross_attn_image", t, keys, values, rotated_keys, a.cross_attention.num_heads,
                            side, a.cross_attention.rope_theta);
    for (size_t i = 0; i < x.size(); ++i) x[i] += update[i];
    t = x;
    layer_norm(t, c, w.at(p + ".norm3.weight"), w.at(p + ".norm3.bias"), 1e-5);
    Map hidden = linear(t, w.at(p + ".linear1.weight"), w.at(p + ".linear1.bias"));
    for (double& v : hidden) v = std::max(v, 0.0);
    update = linear(hidden, w.at(p + ".linear2.weight"), w.at(p + ".linear2.bias"));
    for (size_t i = 0; i < x.size(); ++i) x[i] += update[i];
  }
  layer_norm(x, c, w.at("memory_attention.norm.weight"), w.at("memory_attention.norm.bias"), 1e-5);
  return to_tensor(x, {side * side, c});
}

}  // namespace sam2rt::testing::memory_reference
