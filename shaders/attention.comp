#version 450
#include "storage.glsl"
// Multi-head scaled dot-product attention of one sequence, as kernels/attention.h:
//   out[i, h*D:(h+1)*D] = softmax(q_h[i] . k_h^T * scale) v_h
// A dispatch's z groups are independent batches of the same shapes (a batch of
// prompts: their tokens against one image's keys, or theirs), each operand
// batch_stride elements further on per batch (0: shared).
// One invocation per (query, head, batch); two passes over the keys (the row maximum,
// then exp(s - max) and its products with v), the division after the product,
// all fp32, no barriers.
// The head dimension (a multiple of 4, at most 128) is walked in unrolled vec4
// steps, not in a loop: llvmpipe (lavapipe) ends a shader's loops after 65535
// iterations in all, which a loop over the dimension inside the loop over 4096
// keys exceeds; this way an invocation iterates about 2 * keys times.
layout(local_size_x = 64) in;

const uint kMaxQuads = 32;  // head_dim <= 128

layout(std430, binding = 0) readonly buffer Q { ELEMENT q[]; };
layout(std430, binding = 1) readonly buffer K { ELEMENT k[]; };
layout(std430, binding = 2) readonly buffer V { ELEMENT v[]; };
layout(std430, binding = 3) writeonly buffer O { ELEMENT o[]; };

layout(push_constant) uniform Push {
  uint nq, nk, heads, head_dim;
  uint q_base, ldq, k_base, ldk;
  uint v_base, ldv, o_base, ldo;
  float scale;
  uint q_batch, k_batch, v_batch, o_batch;  // batch strides (dispatch z: the batch); 0: shared
} p;

// Where this invocation's batch (the dispatch's z group) starts in each operand.
uint q_base() { return p.q_base + gl_WorkGroupID.z * p.q_batch; }
uint k_base() { return p.k_base + gl_WorkGroupID.z * p.k_batch; }
uint v_base() { return p.v_base + gl_WorkGroupID.z * p.v_batch; }
uint o_base() { return p.o_base + gl_WorkGroupID.z * p.o_batch; }

vec4 key4(uint at) { return vec4(float(k[at]), float(k[at + 1]), float(k[at + 2]), float(k[at + 3])); }
vec4 value4(uint at) { return vec4(float(v[at]), float(v[at + 1]), float(v[at + 2]), float(v[at + 3])); }

void main() {
  uint i = gl_GlobalInvocationID.x, h = gl_GlobalInvocationID.y;
  if (i >= p.nq || h >= p.heads) return;
  uint column = h * p.head_dim, quads = p.head_dim / 4;
  vec4 query[kMaxQuads];
  for (uint c = 0; c < quads; ++c) {
    uint at = q_base() + i * p.ldq + column + 4 * c;
    query[c] = vec4(float(q[at]), float(q[at + 1]), float(q[at + 2]), float(q[at + 3]));
  }

  float m = -3.402823466e38;
  for (uint j = 0; j < p.nk; ++j) {
    uint kj = k_base() + j * p.ldk + column;
    float s = 0.0;
#define STEP(c) if (c < quads) s += dot(query[c], key4(kj + 4 * c));
    STEP(0) STEP(1) STEP(2) STEP(3) STEP(4) STEP(5) STEP(6) STEP(7) STEP(8) STEP(9) STEP(10) STEP(11) STEP(12) STEP(13) STEP(14) STEP(15) STEP(16) STEP(17) STEP(18) STEP(19) STEP(20) STEP(21) STEP(22) STEP(23) STEP(24) STEP(25) STEP(26) STEP(27) STEP(28) STEP(29) STEP(30) STEP(31)
#undef STEP
    m = max(m, s * p.scale);
  }
  vec4 acc[kMaxQuads];
  for (uint c = 0; c < quads; ++c) acc[c] = vec4(0.0);
  float sum = 0.0;
  for (uint j = 0; j < p.nk; ++j) {
    uint kj = k_base() + j * p.ldk + column, vj = v_base() + j * p.ldv + column;
    float s = 0.0;
#define STEP(c) if (c < quads) s += dot(query[c], key4(kj + 4 * c));
    STEP(0) STEP(1) STEP(2) STEP(3) STEP(4) STEP(5) STEP(6) STEP(7) STEP(8) STEP(9) STEP(10) STEP(11) STEP(12) STEP(13) STEP(14) STEP(15) STEP(16) STEP(17) STEP(18) STEP(19) STEP(20) STEP(21) STEP(22) STEP(23) STEP(24) STEP(25) STEP(26) STEP(27) STEP(28) STEP(29) STEP(30) STEP(31)
#undef STEP
    float e = exp(s * p.scale - m);
    sum += e;
#define STEP(c) if (c < quads) acc[c] += e * value4(vj + 4 * c);
    STEP(0) STEP(1) STEP(2) STEP(3) STEP(4) STEP(5) STEP(6) STEP(7) STEP(8) STEP(9) STEP(10) STEP(11) STEP(12) STEP(13) STEP(14) STEP(15) STEP(16) STEP(17) STEP(18) STEP(19) STEP(20) STEP(21) STEP(22) STEP(23) STEP(24) STEP(25) STEP(26) STEP(27) STEP(28) STEP(29) STEP(30) STEP(31)
#undef STEP
  }
  float inv = 1.0 / sum;
  uint oi = o_base() + i * p.ldo + column;
  for (uint c = 0; c < quads; ++c) {
    vec4 out4 = acc[c] * inv;
    o[oi + 4 * c] = ELEMENT(out4.x);
    o[oi + 4 * c + 1] = ELEMENT(out4.y);
    o[oi + 4 * c + 2] = ELEMENT(out4.z);
    o[oi + 4 * c + 3] = ELEMENT(out4.w);
  }
}
