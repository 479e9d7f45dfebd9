#version 450
#include "storage.glsl"
// y[i] = x[i] + addend[i % period]: the position-embedding add (period: the whole
// map), add_channel_vector_inplace (period: the channels) and, with no addend, a
// copy. x and y may be the same range (in place). One invocation per value.
layout(local_size_x = 64) in;

layout(std430, binding = 0) readonly buffer X { ELEMENT x[]; };
layout(std430, binding = 1) readonly buffer A { ELEMENT addend[]; };
layout(std430, binding = 2) writeonly buffer Y { ELEMENT y[]; };

layout(push_constant) uniform Push {
  uint count, period, has_addend;
  uint x_base, addend_base, y_base;
} p;

void main() {
  uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  if (i >= p.count) return;
  float value = float(x[p.x_base + i]);
  if (p.has_addend != 0) value += float(addend[p.addend_base + i % p.period]);
  y[p.y_base + i] = ELEMENT(value);
}
