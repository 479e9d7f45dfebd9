#version 450
#include "storage.glsl"
// nn.MaxPool2d(2, stride 2) on token-major maps [N, H, W, C_total], reading
// channels [channel_offset, channel_offset + channels): -> [N, H/2, W/2, channels].
// One invocation per output value (an odd last row or column is dropped).
layout(local_size_x = 64) in;

layout(std430, binding = 0) readonly buffer X { ELEMENT x[]; };
layout(std430, binding = 1) writeonly buffer Y { ELEMENT y[]; };

layout(push_constant) uniform Push {
  uint count;  // N * (H/2) * (W/2) * channels
  uint height, width, total_channels, channel_offset, channels;
  uint out_height, out_width;
  uint x_base, y_base;
} p;

void main() {
  uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  if (i >= p.count) return;
  uint c = i % p.channels, pixel = i / p.channels;
  uint ox = pixel % p.out_width, oy = (pixel / p.out_width) % p.out_height, n = pixel / (p.out_width * p.out_height);
  uint top = p.x_base + ((n * p.height + 2 * oy) * p.width + 2 * ox) * p.total_channels + p.channel_offset + c;
  uint bottom = top + p.width * p.total_channels;
  y[p.y_base + i] = ELEMENT(max(max(float(x[top]), float(x[top + p.total_channels])),
                               max(float(x[bottom]), float(x[bottom + p.total_channels]))));
}
