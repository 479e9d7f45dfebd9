#version 450
#include "storage.glsl"
#include "gelu.glsl"
// A Linear layer on a band of rows: y[r, o] = epilogue(sum_k x[r, k] w[o, k] + b[o]),
// W in PyTorch's [out, in] layout. One invocation per output, sequential fp32
// accumulation, no barriers (the fastest form on lavapipe, and the exact path).
// Epilogues as kernels/matmul.h: 0 none, 1 GELU (erf form), 2 accumulate (y += ...), 3 ReLU.
layout(local_size_x = 16, local_size_y = 16) in;

layout(std430, binding = 0) readonly buffer X { ELEMENT x[]; };
layout(std430, binding = 1) readonly buffer W { ELEMENT w[]; };
layout(std430, binding = 2) readonly buffer B { ELEMENT b[]; };
layout(std430, binding = 3) buffer Y { ELEMENT y[]; };

layout(push_constant) uniform Push {
  uint rows, in_features, out_features;
  uint x_base, ldx;  // in floats, from the start of each binding
  uint w_base, b_base;
  uint y_base, ldy;
  uint epilogue, has_bias;
} p;

void main() {
  uint o = gl_GlobalInvocationID.x, r = gl_GlobalInvocationID.y;
  if (o >= p.out_features || r >= p.rows) return;
  uint xi = p.x_base + r * p.ldx, wi = p.w_base + o * p.in_features;
  float acc = 0.0;
  for (uint k = 0; k < p.in_features; ++k) acc += float(x[xi + k]) * float(w[wi + k]);
  if (p.has_bias != 0) acc += float(b[p.b_base + o]);
  uint yi = p.y_base + r * p.ldy + o;
  if (p.epilogue == 1) {
    acc = gelu(acc);
  } else if (p.epilogue == 2) {
    acc += float(y[yi]);
  } else if (p.epilogue == 3) {
    acc = max(acc, 0.0);
  }
  y[yi] = ELEMENT(acc);
}
