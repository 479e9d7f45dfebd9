#pragma once

// Plain references for the Backend op test (backend_ops_test.cpp): the
// definition of each op written as the loops it stands for, accumulated in
// double, with nothing shared with the kernels or shaders under test.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/tensor.h"

namespace sam2rt::testing::reference {

// float -> bfloat16 -> float, rounded to nearest even (finite values).
inline float bf16_rounded(float value) {
  uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  bits &= 0xffff0000u;
  float rounded = 0.0f;
  std::memcpy(&rounded, &bits, sizeof rounded);
  return rounded;
}

inline Tensor bf16_rounded(const Tensor& x) {
  Tensor y(x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) y[i] = bf16_rounded(x[i]);
  return y;
}

inline double gelu(double v) { return 0.5 * v * std::erfc(-v / std::sqrt(2.0)); }
inline double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

// y [rows, out] = x [rows, in] w^T + bias (bias may be empty).
inline std::vector<double> linear(const Tensor& x, int64_t rows, const Tensor& weight, const Tensor& bias) {
  const int64_t out = weight.dim(0), in = weight.dim(1);
  std::vector<double> y(static_cast<size_t>(rows * out));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < out; ++o) {
      double sum = bias.empty() ? 0.0 : bias[o];
      for (int64_t i = 0; i < in; ++i) sum += static_cast<double>(x[r * in + i]) * weight[o * in + i];
      y[static_cast<size_t>(r * out + o)] = sum;
    }
  }
  return y;
}

// Multi-head attention of one sequence, q and k [nq|nk, heads * d], v [nk,
// heads * value_dim] (value_dim 0: d), each row `ld*` elements after the last.
struct AttentionView {
  int64_t nq, nk, heads, head_dim;
  const float *q, *k, *v;
  int64_t ldq, ldk, ldv;
  double scale;
  int64_t value_dim = 0;
};

// out row i (heads * value width values, stride ldo) = softmax(q k^T scale) v per head.
inline void attention(const AttentionView& a, float* out, int64_t ldo) {
  std::vector<double> scores(static_cast<size_t>(a.nk));
  const int64_t values = a.value_dim > 0 ? a.value_dim : a.head_dim;
  for (int64_t h = 0; h < a.heads; ++h) {
    const int64_t column = h * a.head_dim, value_column = h * values;
    for (int64_t i = 0; i < a.nq; ++i) {
      double largest = -INFINITY;
      for (int64_t j = 0; j < a.nk; ++j) {
        double dot = 0.0;
        for (int64_t d = 0; d < a.head_dim; ++d) {
          dot += static_cast<double>(a.q[i * a.ldq + column + d]) * a.k[j * a.ldk + column + d];
        }
        scores[static_cast<size_t>(j)] = dot * a.scale;
        largest = std::max(largest, dot * a.scale);
      }
      double total = 0.0;
      for (double& s : scores) total += (s = std::exp(s - largest));
      for (int64_t d = 0; d < values; ++d) {
        double sum = 0.0;
        for (int64_t j = 0; j < a.nk; ++j) sum += scores[static_cast<size_t>(j)] * a.v[j * a.ldv + value_column + d];
        out[i * ldo + value_column + d] = static_cast<float>(sum / total);
      }
    }
  }
}

// Hiera's windowed attention on qkv [H, W, 3C]: windows of window x window
// tokens over the grid padded at the bottom and right with pad_token [3C], q
// max-pooled 2x2 inside each window with q_pool, every window's tokens its keys,
// the output grid cropped to [H, W, C] ([H/2, W/2, C] pooled).
inline Tensor windowed_attention(const Tensor& qkv, int64_t window, const Tensor& pad_token, int64_t heads,
                                 bool q_pool) {
  const int64_t height = qkv.dim(0), width = qkv.dim(1), channels = qkv.dim(2) / 3;
  const int64_t out_window = q_pool ? window / 2 : window;
  const int64_t out_height = q_pool ? height / 2 : height, out_width = q_pool ? width / 2 : width;
  const int64_t rows = (height + window - 1) / window, cols = (width + window - 1) / window;
  auto token = [&](int64_t y, int64_t x) {
    return y < height && x < width ? qkv.data() + (y * width + x) * 3 * channels : pad_token.data();
  };
  Tensor out({out_height, out_width, channels});
  const int64_t keys = window * window, queries = out_window * out_window;
  std::vector<float> k(static_cast<size_t>(keys * channels)), v(k.size());
  std::vector<float> q(static_cast<size_t>(queries * channels)), attended(q.size());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      for (int64_t j = 0; j < keys; ++j) {
        const float* t = token(r * window + j / window, c * window + j % window);
        std::copy_n(t + channels, channels, k.data() + j * channels);
        std::copy_n(t + 2 * channels, channels, v.data() + j * channels);
      }
      for (int64_t i = 0; i < queries; ++i) {
        const int64_t qy = i / out_window, qx = i % out_window;
        for (int64_t ch = 0; ch < channels; ++ch) {
          float value = q_pool ? -INFINITY : token(r * window + qy, c * window + qx)[ch];
          for (int64_t p = 0; q_pool && p < 4; ++p) {
            value = std::max(value, token(r * window + 2 * qy + p / 2, c * window + 2 * qx + p % 2)[ch]);
          }
          q[static_cast<size_t>(i * channels + ch)] = value;
        }
      }
      const int64_t head_dim = channels / heads;
      attention({queries, keys, heads, head_dim, q.data(), k.data(), v.data(), channels, channels, channels,
                 1.0 / std::sqrt(static_cast<double>(head_dim))},
                attended.data(), channels);
      for (int64_t i = 0; i < queries; ++i) {
        const int64_t oy = r * out_window + i / out_window, ox = c * out_window + i % out_window;
        if (oy >= out_height || ox >= out_width) continue;
        std::copy_n(attended.data() + i * channels, channels, out.data() + (oy * out_width + ox) * channels);
      }
    }
  }
  return out;
}

// RoPE on the first `rows` rows of x [n, width]: each head's pairs (2i, 2i+1)
// times the complex number table [period, pairs, 2] (cos, sin) of row r % period.
inline Tensor rotary_rows(const Tensor& x, int64_t rows, const Tensor& table) {
  const int64_t width = x.dim(-1), period = table.dim(0), pairs = table.dim(1);
  Tensor y = x.clone();
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < width; c += 2) {
      const int64_t i = c / 2 % pairs;
      const double re = x[r * width + c], im = x[r * width + c + 1];
      const double cos = table[(r % period * pairs + i) * 2], sin = table[(r % period * pairs + i) * 2 + 1];
      y[r * width + c] = static_cast<float>(re * cos - im * sin);
      y[r * width + c + 1] = static_cast<float>(re * sin + im * cos);
    }
  }
  return y;
}

// Depthwise conv, stride 1, zero padding: x [H, W, C], weight [C, 1, k, k], bias [C].
inline Tensor depthwise_conv2d_hwc(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t padding) {
  const int64_t height = x.dim(0), width = x.dim(1), channels = x.dim(2), kernel = weight.dim(3);
  const int64_t out_height = height + 2 * padding - kernel + 1, out_width = width + 2 * padding - kernel + 1;
  Tensor y({out_height, out_width, channels});
  for (int64_t oy = 0; oy < out_height; ++oy) {
    for (int64_t ox = 0; ox < out_width; ++ox) {
      for (int64_t c = 0; c < channels; ++c) {
        double sum = bias[c];
        for (int64_t ky = 0; ky < kernel; ++ky) {
          for (int64_t kx = 0; kx < kernel; ++kx) {
            const int64_t iy = oy - padding + ky, ix = ox - padding + kx;
            if (iy < 0 || iy >= height || ix < 0 || ix >= width) continue;
            sum += static_cast<double>(x[(iy * width + ix) * channels + c]) * weight[(c * kernel + ky) * kernel + kx];
          }
        }
        y[(oy * out_width + ox) * channels + c] = static_cast<float>(sum);
      }
    }
  }
  return y;
}

}  // namespace sam2rt::testing::reference
