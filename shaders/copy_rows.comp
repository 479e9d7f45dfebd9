#version 450
#include "storage.glsl"
// y[r * y_stride + i] = x[r * x_stride + i] for i < width, r < count / width:
// the same rows of each prompt of a batch gathered from or scattered into
// tensors of the whole batch (the mask decoder's head tokens, its packed
// outputs). One invocation per value.
layout(local_size_x = 64) in;

layout(std430, binding = 0) readonly buffer X { ELEMENT x[]; };
layout(std430, binding = 1) writeonly buffer Y { ELEMENT y[]; };

layout(push_constant) uniform Push {
  uint count, width;
  uint x_base, x_stride, y_base, y_stride;
} p;

void main() {
  uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  if (i >= p.count) return;
  uint row = i / p.width, column = i % p.width;
  y[p.y_base + row * p.y_stride + column] = x[p.x_base + row * p.x_stride + column];
}
