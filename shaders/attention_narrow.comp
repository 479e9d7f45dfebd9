#version 450
#include "storage.glsl"
// attention.comp for head dimensions that are not a multiple of 4 (the micro
// config's decoder cross attention: 8 heads of 2): the same two passes over the
// keys, fp32, no barriers, with plain loops over the dimension. An invocation
// iterates about keys * (2 + 3 * head_dim) times, which VulkanOps keeps below
// llvmpipe's 65535 (see attention.comp).
layout(local_size_x = 64) in;

const uint kMaxHeadDim = 128;

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

void main() {
  uint i = gl_GlobalInvocationID.x, h = gl_GlobalInvocationID.y;
  if (i >= p.nq || h >= p.heads) return;
  uint column = h * p.head_dim;
  float query[kMaxHeadDim];
  for (uint c = 0; c < p.head_dim; ++c) query[c] = float(q[q_base() + i * p.ldq + column + c]);

  float m = -3.402823466e38;
  for (uint j = 0; j < p.nk; ++j) {
    uint kj = k_base() + j * p.ldk + column;
    float s = 0.0;
    for (uint c = 0; c < p.head_dim; ++c) s += query[c] * float(k[kj + c]);
    m = max(m, s * p.scale);
  }
  float acc[kMaxHeadDim];
  for (uint c = 0; c < p.head_dim; ++c) acc[c] = 0.0;
  float sum = 0.0;
  for (uint j = 0; j < p.nk; ++j) {
    uint kj = k_base() + j * p.ldk + column, vj = v_base() + j * p.ldv + column;
    float s = 0.0;
    for (uint c = 0; c < p.head_dim; ++c) s += query[c] * float(k[kj + c]);
    float e = exp(s * p.scale - m);
    sum += e;
    for (uint c = 0; c < p.head_dim; ++c) acc[c] += e * float(v[vj + c]);
  }
  float inv = 1.0 / sum;
  uint oi = o_base() + i * p.ldo + column;
  for (uint c = 0; c < p.head_dim; ++c) o[oi + c] = ELEMENT(acc[c] * inv);
}
