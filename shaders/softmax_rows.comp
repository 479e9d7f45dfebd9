#version 450
#include "storage.glsl"
// In place, row by row: x[r, :] = exp(scale * x[r, :] - max) / sum, max the row's
// largest scale * x. One invocation per row, fp32, no barriers.
layout(local_size_x = 64) in;

layout(std430, binding = 0) buffer X { ELEMENT x[]; };

layout(push_constant) uniform Push {
  uint rows, cols;
  uint base, ld;
  float scale;
} p;

void main() {
  uint r = gl_GlobalInvocationID.x;
  if (r >= p.rows) return;
  uint row = p.base + r * p.ld;
  float m = p.scale * float(x[row]);
  for (uint c = 1; c < p.cols; ++c) m = max(m, p.scale * float(x[row + c]));
  float sum = 0.0;
  for (uint c = 0; c < p.cols; ++c) {
    float e = exp(p.scale * float(x[row + c]) - m);
    x[row + c] = ELEMENT(e);
    sum += e;
  }
  float inv = 1.0 / sum;
  for (uint c = 0; c < p.cols; ++c) x[row + c] = ELEMENT(float(x[row + c]) * inv);
}
