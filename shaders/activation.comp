#version 450
#include "storage.glsl"
#include "gelu.glsl"
// An activation in place on `count` values: 0 the exact (erf) GELU (the mask
// decoder's upscaling, after the LayerNorm2d and after the second transposed
// conv), 1 the sigmoid (its IoU head). One invocation per value.
layout(local_size_x = 64) in;

layout(std430, binding = 0) buffer X { ELEMENT x[]; };

layout(push_constant) uniform Push {
  uint count, kind;
  uint x_base;
} p;

void main() {
  uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  if (i >= p.count) return;
  float v = float(x[p.x_base + i]);
  x[p.x_base + i] = ELEMENT(p.kind == 0 ? gelu(v) : 1.0 / (1.0 + exp(-v)));
}
