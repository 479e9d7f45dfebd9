#version 450
#include "storage.glsl"
// attention.comp for GPUs: the 64 queries of a workgroup (one head) read the
// keys and values in tiles of 32 tokens staged through shared memory, so each
// key and value is read from memory once per workgroup instead of once per
// query (global attention: 4096 queries over 4096 keys). Each invocation still
// computes its query's row exactly as attention.comp does: the row maximum in a
// first pass, then exp(s - max), its sum and the products with v in key order,
// the division after the product, all fp32. Invocations past the last query
// take part in the tile loads and barriers but compute nothing.
layout(local_size_x = 64) in;

const uint kMaxQuads = 32;  // head_dim <= 128
const uint kTileKeys = 32;

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

shared vec4 key_tile[kTileKeys][kMaxQuads];
shared vec4 value_tile[kTileKeys][kMaxQuads];

vec4 load4(uint at, bool values) {
  return values ? vec4(float(v[at]), float(v[at + 1]), float(v[at + 2]), float(v[at + 3]))
                : vec4(float(k[at]), float(k[at + 1]), float(k[at + 2]), float(k[at + 3]));
}

// Keys [j0, j0 + kTileKeys) of this head (and their values) into shared memory; zeros past nk.
void load_tile(uint j0, uint column, uint quads, bool with_values) {
  for (uint e = gl_LocalInvocationID.x; e < kTileKeys * quads; e += gl_WorkGroupSize.x) {
    uint key = e / quads, c = e % quads, j = j0 + key;
    bool inside = j < p.nk;
    key_tile[key][c] = inside ? load4(k_base() + j * p.ldk + column + 4 * c, false) : vec4(0.0);
    if (with_values) value_tile[key][c] = inside ? load4(v_base() + j * p.ldv + column + 4 * c, true) : vec4(0.0);
  }
}

void main() {
  uint i = gl_GlobalInvocationID.x, h = gl_WorkGroupID.y;
  bool has_query = i < p.nq;
  uint column = h * p.head_dim, quads = p.head_dim / 4;
  vec4 query[kMaxQuads];
  for (uint c = 0; c < quads; ++c) {
    uint at = q_base() + min(i, p.nq - 1) * p.ldq + column + 4 * c;
    query[c] = vec4(float(q[at]), float(q[at + 1]), float(q[at + 2]), float(q[at + 3]));
  }

  float m = -3.402823466e38;
  for (uint j0 = 0; j0 < p.nk; j0 += kTileKeys) {
    load_tile(j0, column, quads, false);
    barrier();
    uint keys = min(kTileKeys, p.nk - j0);
    for (uint key = 0; has_query && key < keys; ++key) {
      float s = 0.0;
#define STEP(c) if (c < quads) s += dot(query[c], key_tile[key][c]);
      STEP(0) STEP(1) STEP(2) STEP(3) STEP(4) STEP(5) STEP(6) STEP(7) STEP(8) STEP(9) STEP(10) STEP(11) STEP(12) STEP(13) STEP(14) STEP(15) STEP(16) STEP(17) STEP(18) STEP(19) STEP(20) STEP(21) STEP(22) STEP(23) STEP(24) STEP(25) STEP(26) STEP(27) STEP(28) STEP(29) STEP(30) STEP(31)
#undef STEP
      m = max(m, s * p.scale);
    }
    barrier();
  }
  vec4 acc[kMaxQuads];
  for (uint c = 0; c < quads; ++c) acc[c] = vec4(0.0);
  float sum = 0.0;
  for (uint j0 = 0; j0 < p.nk; j0 += kTileKeys) {
    load_tile(j0, column, quads, true);
    barrier();
    uint keys = min(kTileKeys, p.nk - j0);
    for (uint key = 0; has_query && key < keys; ++key) {
      float s = 0.0;
#define STEP(c) if (c < quads) s += dot(query[c], key_tile[key][c]);
      STEP(0) STEP(1) STEP(2) STEP(3) STEP(4) STEP(5) STEP(6) STEP(7) STEP(8) STEP(9) STEP(10) STEP(11) STEP(12) STEP(13) STEP(14) STEP(15) STEP(16) STEP(17) STEP(18) STEP(19) STEP(20) STEP(21) STEP(22) STEP(23) STEP(24) STEP(25) STEP(26) STEP(27) STEP(28) STEP(29) STEP(30) STEP(31)
#undef STEP
      float e = exp(s * p.scale - m);
      sum += e;
#define STEP(c) if (c < quads) acc[c] += e * value_tile[key][c];
      STEP(0) STEP(1) STEP(2) STEP(3) STEP(4) STEP(5) STEP(6) STEP(7) STEP(8) STEP(9) STEP(10) STEP(11) STEP(12) STEP(13) STEP(14) STEP(15) STEP(16) STEP(17) STEP(18) STEP(19) STEP(20) STEP(21) STEP(22) STEP(23) STEP(24) STEP(25) STEP(26) STEP(27) STEP(28) STEP(29) STEP(30) STEP(31)
#undef STEP
    }
    barrier();
  }
  if (!has_query) return;
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
