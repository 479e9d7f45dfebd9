#include "kernels/window_attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/attention.h"
#include "kernels/window.h"

namespace sam2rt {

void windowed_attention(const Tensor& qkv, int64_t window, const float* pad_token, int64_t heads, bool q_pool,
                        Tensor& out, bool bf16_products) {
  if (qkv.rank() != 3 || qkv.dim(2) % 3 != 0) {
    throw Error("windowed attention: qkv must be [H, W, 3C], got " + shape_to_string(qkv.shape()));
  }
  const int64_t height = qkv.dim(0), width = qkv.dim(1), channels = qkv.dim(2) / 3;
  if (window < 1 || heads < 1 || channels % heads != 0 || (q_pool && window % 2 != 0)) {
    throw Error("windowed attention: bad window " + std::to_string(window) + " or heads " + std::to_string(heads) +
                " for " + shape_to_string(qkv.shape()));
  }
  const int64_t out_window = q_pool ? window / 2 : window;
  const int64_t out_height = q_pool ? height / 2 : height, out_width = q_pool ? width / 2 : width;
  const int64_t rows = windows_along(height, window), cols = windows_along(width, window);
  if (out.shape() != Shape{out_height, out_width, channels} || windows_along(out_height, out_window) != rows ||
      windows_along(out_width, out_window) != cols) {
    throw Error("windowed attention: output is " + shape_to_string(out.shape()) + ", expected [" +
                std::to_string(out_height) + ", " + std::to_string(out_width) + ", " + std::to_string(channels) +
                "] on the same window grid");
  }
  const int64_t keys = window * window, queries = out_window * out_window, token = 3 * channels;
  const size_t token_bytes = static_cast<size_t>(token) * sizeof(float);
  const int64_t head_dim = channels / heads;
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)));

#pragma omp parallel
  {
    // Per-thread buffers kept between calls and only grown: no allocation in the
    // encoder's steady state.
    thread_local std::vector<float> tokens, pooled, attended;
    tokens.resize(std::max(tokens.size(), static_cast<size_t>(keys * token)));
    pooled.resize(std::max(pooled.size(), q_pool ? static_cast<size_t>(queries * channels) : 0));
    attended.resize(std::max(attended.size(), static_cast<size_t>(queries * channels)));
#pragma omp for schedule(dynamic)
    for (int64_t n = 0; n < rows * cols; ++n) {
      const int64_t y0 = n / cols * window, x0 = n % cols * window;
      for (int64_t y = 0; y < window; ++y) {
        const int64_t run = y0 + y < height ? std::min(window, width - x0) : 0;
        float* dst = tokens.data() + y * window * token;
        if (run > 0) std::memcpy(dst, qkv.data() + ((y0 + y) * width + x0) * token, static_cast<size_t>(run) * token_bytes);
        for (int64_t x = run; x < window; ++x) std::memcpy(dst + x * token, pad_token, token_bytes);
      }
      AttentionArgs args;
      if (q_pool) {
        for (int64_t py = 0; py < out_window; ++py) {
          for (int64_t px = 0; px < out_window; ++px) {
            const float* p00 = tokens.data() + (2 * py * window + 2 * px) * token;
            const float* p01 = p00 + token;
            const float* p10 = p00 + window * token;
            const float* p11 = p10 + token;
            float* dst = pooled.data() + (py * out_window + px) * channels;
            for (int64_t i = 0; i < channels; ++i) dst[i] = std::max(std::max(p00[i], p01[i]), std::max(p10[i], p11[i]));
          }
        }
        args.q = pooled.data();
        args.ldq = channels;
      } else {
        args.q = tokens.data();
        args.ldq = token;
      }
      args.nq = queries;
      args.nk = keys;
      args.heads = heads;
      args.head_dim = head_dim;
      args.k = tokens.data() + channels;
      args.ldk = token;
      args.v = tokens.data() + 2 * channels;
      args.ldv = token;
      args.out = attended.data();
      args.ldo = channels;
      args.scale = scale;
      args.bf16_products = bf16_products;
      attention_serial(args);
      const int64_t oy0 = n / cols * out_window, ox0 = n % cols * out_window;
      const int64_t run = std::min(out_window, out_width - ox0);
      for (int64_t y = 0; y < out_window && oy0 + y < out_height; ++y) {
        std::memcpy(out.data() + ((oy0 + y) * out_width + ox0) * channels, attended.data() + y * out_window * channels,
                    static_cast<size_t>(run * channels) * sizeof(float));
      }
    }
  }
}

}  // namespace sam2rt
