#version 450
#include "storage.glsl"
// Hiera's windowed attention straight from the qkv grid, as
// kernels/window_attention.h: qkv [H, W, 3C] split into w x w windows (the grid
// padded at the bottom/right with pad_token, 3C values), optionally q max-pooled
// 2x2 inside each window, attention of each window's queries over its w*w
// tokens, each result written to its place in out [H', W', C] (padding cropped).
// One invocation per (output token of the padded grid, head); fp32, two passes
// over the keys as attention.comp, no barriers.
layout(local_size_x = 64) in;

const uint kMaxHeadDim = 128;

layout(std430, binding = 0) readonly buffer QKV { ELEMENT qkv[]; };
layout(std430, binding = 1) readonly buffer Pad { ELEMENT pad_token[]; };
layout(std430, binding = 2) writeonly buffer O { ELEMENT o[]; };

layout(push_constant) uniform Push {
  uint height, width, channels, heads;
  uint window, q_pool;
  uint window_cols;           // windows along the width
  uint out_height, out_width;
  uint qkv_base, pad_base, o_base;
  float scale;
} p;

// Element e (of 3C) of the token at grid position (y, x), pad_token outside the grid.
float token(uint y, uint x, uint e) {
  return (y < p.height && x < p.width) ? float(qkv[p.qkv_base + (y * p.width + x) * 3 * p.channels + e])
                                       : float(pad_token[p.pad_base + e]);
}

void main() {
  uint out_window = p.q_pool != 0 ? p.window / 2 : p.window;
  uint queries = out_window * out_window;
  uint n = gl_GlobalInvocationID.x / queries, qi = gl_GlobalInvocationID.x % queries, h = gl_GlobalInvocationID.y;
  uint window_rows = (p.out_height + out_window - 1) / out_window;
  if (n >= window_rows * p.window_cols || h >= p.heads) return;
  uint oy = n / p.window_cols * out_window + qi / out_window, ox = n % p.window_cols * out_window + qi % out_window;
  if (oy >= p.out_height || ox >= p.out_width) return;  // cropped padding
  uint y0 = n / p.window_cols * p.window, x0 = n % p.window_cols * p.window;
  uint head_dim = p.channels / p.heads, column = h * head_dim;

  float query[kMaxHeadDim];
  if (p.q_pool != 0) {
    uint py = y0 + 2 * (qi / out_window), px = x0 + 2 * (qi % out_window);
    for (uint d = 0; d < head_dim; ++d) {
      uint e = column + d;
      query[d] = max(max(token(py, px, e), token(py, px + 1, e)), max(token(py + 1, px, e), token(py + 1, px + 1, e)));
    }
  } else {
    for (uint d = 0; d < head_dim; ++d) query[d] = token(oy, ox, column + d);
  }

  uint keys = p.window * p.window;
  float m = -3.402823466e38;
  for (uint j = 0; j < keys; ++j) {
    uint ky = y0 + j / p.window, kx = x0 + j % p.window;
    float s = 0.0;
    for (uint d = 0; d < head_dim; ++d) s += query[d] * token(ky, kx, p.channels + column + d);
    m = max(m, s * p.scale);
  }
  float acc[kMaxHeadDim];
  for (uint d = 0; d < head_dim; ++d) acc[d] = 0.0;
  float sum = 0.0;
  for (uint j = 0; j < keys; ++j) {
    uint ky = y0 + j / p.window, kx = x0 + j % p.window;
    float s = 0.0;
    for (uint d = 0; d < head_dim; ++d) s += query[d] * token(ky, kx, p.channels + column + d);
    float e = exp(s * p.scale - m);
    sum += e;
    for (uint d = 0; d < head_dim; ++d) acc[d] += e * token(ky, kx, 2 * p.channels + column + d);
  }
  float inv = 1.0 / sum;
  uint oi = p.o_base + (oy * p.out_width + ox) * p.channels + column;
  for (uint d = 0; d < head_dim; ++d) o[oi + d] = ELEMENT(acc[d] * inv);
}
