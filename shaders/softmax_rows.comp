#version 450
#include "storage.glsl"
// In place, row by row: x[r, :] = exp(scale * x[r, :] - max) / sum, max the row's
// largest scale * x. One invocation per row, fp32, no barriers. Four columns per
// loop iteration, in column order: llvmpipe (lavapipe) ends a shader's loops
// after 65535 iterations in all, and the memory attention's rows are up to
// 28 736 keys long; three passes of cols / 4 iterations stay under it up to
// VulkanOps::kMaxSoftmaxColumns.
layout(local_size_x = 64) in;

layout(std430, binding = 0) buffer X { ELEMENT x[]; };

layout(push_constant) uniform Push {
  uint rows, cols;
  uint base, ld;
  float scale;
} p;

// exp(scale * x[at] - m) written back, added to the row's sum.
void exponentiate(uint at, float m, inout float sum) {
  float e = exp(p.scale * float(x[at]) - m);
  x[at] = ELEMENT(e);
  sum += e;
}

void main() {
  uint r = gl_GlobalInvocationID.x;
  if (r >= p.rows) return;
  uint row = p.base + r * p.ld;
  // The last column stands in for those past the end: the maximum is unchanged.
  float m = p.scale * float(x[row]);
  for (uint c = 0; c < p.cols; c += 4) {
    m = max(m, p.scale * float(x[row + c]));
    m = max(m, p.scale * float(x[row + min(c + 1, p.cols - 1)]));
    m = max(m, p.scale * float(x[row + min(c + 2, p.cols - 1)]));
    m = max(m, p.scale * float(x[row + min(c + 3, p.cols - 1)]));
  }
  float sum = 0.0;
  for (uint c = 0; c < p.cols; c += 4) {
    exponentiate(row + c, m, sum);
    if (c + 1 < p.cols) exponentiate(row + c + 1, m, sum);
    if (c + 2 < p.cols) exponentiate(row + c + 2, m, sum);
    if (c + 3 < p.cols) exponentiate(row + c + 3, m, sum);
  }
  float inv = 1.0 / sum;
  for (uint c = 0; c < p.cols; c += 4) {
    x[row + c] = ELEMENT(float(x[row + c]) * inv);
    if (c + 1 < p.cols) x[row + c + 1] = ELEMENT(float(x[row + c + 1]) * inv);
    if (c + 2 < p.cols) x[row + c + 2] = ELEMENT(float(x[row + c + 2]) * inv);
    if (c + 3 < p.cols) x[row + c + 3] = ELEMENT(float(x[row + c + 3]) * inv);
  }
}
