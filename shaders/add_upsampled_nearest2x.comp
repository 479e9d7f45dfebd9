#version 450
#include "storage.glsl"
// The FPN's top-down add, as kernels/interpolate.h's add_upsampled_nearest2x_inplace:
// x [2H, 2W, C] += coarse[y / 2, x / 2, c] (nearest 2x upsampling), without
// materialising the upsampled map. One invocation per value of x.
layout(local_size_x = 64) in;

layout(std430, binding = 0) buffer X { ELEMENT x[]; };
layout(std430, binding = 1) readonly buffer Coarse { ELEMENT coarse[]; };

layout(push_constant) uniform Push {
  uint count;  // 2H * 2W * C
  uint coarse_width, channels;
  uint x_base, coarse_base;
} p;

void main() {
  uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  if (i >= p.count) return;
  uint c = i % p.channels, pixel = i / p.channels;
  uint width = 2 * p.coarse_width, col = pixel % width, row = pixel / width;
  uint xi = p.x_base + i, ci = p.coarse_base + ((row / 2) * p.coarse_width + col / 2) * p.channels + c;
  x[xi] = ELEMENT(float(x[xi]) + float(coarse[ci]));
}
