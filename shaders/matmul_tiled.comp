#version 450
#extension GL_EXT_control_flow_attributes : require
#include "storage.glsl"
#include "gelu.glsl"
// matmul.comp (a Linear layer on a band of rows) for GPUs: a 16x16 workgroup
// computes a 64x64 tile of y, 4x4 outputs per invocation, staging 16-wide slices
// of x and W through shared memory so that each value read from memory serves
// 64 products. Each output still sums its products sequentially in k order in
// fp32, then adds the bias and applies the epilogue as matmul.comp does: the
// same arithmetic, fewer memory reads. Out-of-range rows, outputs and k read
// zeros (the products they add are +0). The loops of fixed length are unrolled:
// only the loop over k0 remains, which llvmpipe's cap of 65535 loop iterations
// per invocation allows for any in_features below a million. Batches (the
// dispatch's z) as matmul.comp.
layout(local_size_x = 16, local_size_y = 16) in;

const uint kTile = 64;   // outputs and rows per workgroup
const uint kSlice = 16;  // k per shared-memory step
const uint kPer = 4;     // outputs and rows per invocation

layout(std430, binding = 0) readonly buffer X { ELEMENT x[]; };
layout(std430, binding = 1) readonly buffer W { ELEMENT w[]; };
layout(std430, binding = 2) readonly buffer B { ELEMENT b[]; };
layout(std430, binding = 3) buffer Y { ELEMENT y[]; };

layout(push_constant) uniform Push {
  uint rows, in_features, out_features;
  uint x_base, ldx;  // in elements, from the start of each binding
  uint w_base, b_base;
  uint y_base, ldy;
  uint epilogue, has_bias;
  uint ldw, w_step;  // w[o, k] at w_base + o * ldw + k * w_step, as matmul.comp
  uint x_batch, w_batch, y_batch;  // batch strides, as matmul.comp
} p;

// [row or output][k], padded by one column against bank conflicts.
shared float x_slice[kTile][kSlice + 1];
shared float w_slice[kTile][kSlice + 1];

void main() {
  uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
  uint thread = ty * 16 + tx;
  uint o0 = gl_WorkGroupID.x * kTile, r0 = gl_WorkGroupID.y * kTile;
  uint x_base = p.x_base + gl_WorkGroupID.z * p.x_batch, w_base = p.w_base + gl_WorkGroupID.z * p.w_batch,
       y_base = p.y_base + gl_WorkGroupID.z * p.y_batch;
  float acc[kPer][kPer];
  [[unroll]] for (uint i = 0; i < kPer; ++i) {
    [[unroll]] for (uint j = 0; j < kPer; ++j) acc[i][j] = 0.0;
  }
  for (uint k0 = 0; k0 < p.in_features; k0 += kSlice) {
    // 64 x 16 values of each operand, 4 per invocation.
    [[unroll]] for (uint step = 0; step < kTile * kSlice / 256; ++step) {
      uint e = thread + 256 * step;
      uint t = e / kSlice, k = e % kSlice;
      uint r = r0 + t, o = o0 + t, kk = k0 + k;
      bool in_k = kk < p.in_features;
      x_slice[t][k] = (r < p.rows && in_k) ? float(x[x_base + r * p.ldx + kk]) : 0.0;
      w_slice[t][k] = (o < p.out_features && in_k) ? float(w[w_base + o * p.ldw + kk * p.w_step]) : 0.0;
    }
    barrier();
    [[unroll]] for (uint k = 0; k < kSlice; ++k) {
      float xs[kPer], ws[kPer];
      [[unroll]] for (uint i = 0; i < kPer; ++i) xs[i] = x_slice[ty + 16 * i][k];
      [[unroll]] for (uint j = 0; j < kPer; ++j) ws[j] = w_slice[tx + 16 * j][k];
      [[unroll]] for (uint i = 0; i < kPer; ++i) {
        [[unroll]] for (uint j = 0; j < kPer; ++j) acc[i][j] += xs[i] * ws[j];
      }
    }
    barrier();
  }
  [[unroll]] for (uint i = 0; i < kPer; ++i) {
    uint r = r0 + ty + 16 * i;
    if (r >= p.rows) continue;
    [[unroll]] for (uint j = 0; j < kPer; ++j) {
      uint o = o0 + tx + 16 * j;
      if (o >= p.out_features) continue;
      float value = acc[i][j];
      if (p.has_bias != 0) value += float(b[p.b_base + o]);
      uint yi = y_base + r * p.ldy + o;
      if (p.epilogue == 1) {
        value = gelu(value);
      } else if (p.epilogue == 2) {
        value += float(y[yi]);
      } else if (p.epilogue == 3) {
        value = max(value, 0.0);
      }
      y[yi] = ELEMENT(value);
    }
  }
}
