#version 450
#include "storage.glsl"
// Depthwise nn.Conv2d, stride 1, zero padding, on channels-last maps
// (Backend::depthwise_conv2d_hwc): x [H, W, C], weight [C, 1, k, k], bias [C]
// -> y [OH, OW, C]. One invocation per output value, consecutive invocations
// along the channels (contiguous reads of x).
layout(local_size_x = 64) in;

layout(std430, binding = 0) readonly buffer X { ELEMENT x[]; };
layout(std430, binding = 1) readonly buffer Weight { ELEMENT weight[]; };
layout(std430, binding = 2) readonly buffer Bias { ELEMENT bias[]; };
layout(std430, binding = 3) writeonly buffer Y { ELEMENT y[]; };

layout(push_constant) uniform Push {
  uint count;  // OH * OW * C
  uint height, width, channels, kernel, padding, out_width;
  uint x_base, w_base, b_base, y_base;
} p;

void main() {
  uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  if (i >= p.count) return;
  uint c = i % p.channels, pixel = i / p.channels;
  int oy = int(pixel / p.out_width), ox = int(pixel % p.out_width);
  float sum = float(bias[p.b_base + c]);
  for (uint ky = 0; ky < p.kernel; ++ky) {
    int iy = oy - int(p.padding) + int(ky);
    if (iy < 0 || iy >= int(p.height)) continue;
    for (uint kx = 0; kx < p.kernel; ++kx) {
      int ix = ox - int(p.padding) + int(kx);
      if (ix < 0 || ix >= int(p.width)) continue;
      sum += float(x[p.x_base + (uint(iy) * p.width + uint(ix)) * p.channels + c]) *
             float(weight[p.w_base + (c * p.kernel + ky) * p.kernel + kx]);
    }
  }
  y[p.y_base + i] = ELEMENT(sum);
}
