#version 450
// Multi-head scaled dot-product attention of one sequence, as kernels/attention.h:
//   out[i, h*D:(h+1)*D] = softmax(q_h[i] . k_h^T * scale) v_h
// One invocation per (query, head); two passes over the keys (the row maximum,
// then exp(s - max) and its products with v), the division after the product,
// all fp32, no barriers.
layout(local_size_x = 64) in;

const uint kMaxHeadDim = 128;

layout(std430, binding = 0) readonly buffer Q { float q[]; };
layout(std430, binding = 1) readonly buffer K { float k[]; };
layout(std430, binding = 2) readonly buffer V { float v[]; };
layout(std430, binding = 3) writeonly buffer O { float o[]; };

layout(push_constant) uniform Push {
  uint nq, nk, heads, head_dim;
  uint q_base, ldq, k_base, ldk;
  uint v_base, ldv, o_base, ldo;
  float scale;
} p;

void main() {
  uint i = gl_GlobalInvocationID.x, h = gl_GlobalInvocationID.y;
  if (i >= p.nq || h >= p.heads) return;
  uint column = h * p.head_dim;
  float query[kMaxHeadDim];
  for (uint d = 0; d < p.head_dim; ++d) query[d] = q[p.q_base + i * p.ldq + column + d];

  float m = -3.402823466e38;
  for (uint j = 0; j < p.nk; ++j) {
    uint kj = p.k_base + j * p.ldk + column;
    float s = 0.0;
    for (uint d = 0; d < p.head_dim; ++d) s += query[d] * k[kj + d];
    m = max(m, s * p.scale);
  }
  float acc[kMaxHeadDim];
  for (uint d = 0; d < p.head_dim; ++d) acc[d] = 0.0;
  float sum = 0.0;
  for (uint j = 0; j < p.nk; ++j) {
    uint kj = p.k_base + j * p.ldk + column, vj = p.v_base + j * p.ldv + column;
    float s = 0.0;
    for (uint d = 0; d < p.head_dim; ++d) s += query[d] * k[kj + d];
    float e = exp(s * p.scale - m);
    sum += e;
    for (uint d = 0; d < p.head_dim; ++d) acc[d] += e * v[vj + d];
  }
  float inv = 1.0 / sum;
  uint oi = p.o_base + i * p.ldo + column;
  for (uint d = 0; d < p.head_dim; ++d) o[oi + d] = acc[d] * inv;
}
