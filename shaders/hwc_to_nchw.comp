#version 450
#include "storage.glsl"
// Token-major [H, W, C] -> [1, C, H, W], as kernels/layout.h's hwc_to_nchw: the
// layout of the encoder's public outputs. One invocation per output value.
layout(local_size_x = 64) in;

layout(std430, binding = 0) readonly buffer X { ELEMENT x[]; };
layout(std430, binding = 1) writeonly buffer Y { ELEMENT y[]; };

layout(push_constant) uniform Push {
  uint count;   // H * W * C
  uint pixels;  // H * W
  uint channels;
  uint x_base, y_base;
} p;

void main() {
  uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  if (i >= p.count) return;
  uint c = i / p.pixels, pixel = i % p.pixels;
  y[p.y_base + i] = x[p.x_base + pixel * p.channels + c];
}
