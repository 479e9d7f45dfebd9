#version 450
#include "storage.glsl"
// nn.Conv2d on one image, as kernels/conv2d.h's conv2d_to_hwc: input [1, Cin, H, W]
// (NCHW), weight [Cout, Cin, k, k], bias [Cout], zero padding; output token-major
// [OH, OW, Cout] (Hiera's patch embed: 7x7, stride 4, padding 3). One invocation
// per output value, fp32, the bias then the products added in (cin, ky, kx) order.
layout(local_size_x = 64) in;

layout(std430, binding = 0) readonly buffer X { ELEMENT x[]; };
layout(std430, binding = 1) readonly buffer W { ELEMENT w[]; };
layout(std430, binding = 2) readonly buffer B { ELEMENT b[]; };
layout(std430, binding = 3) writeonly buffer Y { ELEMENT y[]; };

layout(push_constant) uniform Push {
  uint count;  // OH * OW * Cout
  uint in_channels, height, width;
  uint out_channels, kernel, stride, padding;
  uint out_width;
  uint x_base, w_base, b_base, y_base;
} p;

void main() {
  uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  if (i >= p.count) return;
  uint co = i % p.out_channels, pixel = i / p.out_channels;
  int oy = int(pixel / p.out_width), ox = int(pixel % p.out_width);
  float acc = float(b[p.b_base + co]);
  for (uint ci = 0; ci < p.in_channels; ++ci) {
    for (uint ky = 0; ky < p.kernel; ++ky) {
      int iy = oy * int(p.stride) - int(p.padding) + int(ky);
      if (iy < 0 || iy >= int(p.height)) continue;
      for (uint kx = 0; kx < p.kernel; ++kx) {
        int ix = ox * int(p.stride) - int(p.padding) + int(kx);
        if (ix < 0 || ix >= int(p.width)) continue;
        acc += float(x[p.x_base + (ci * p.height + uint(iy)) * p.width + uint(ix)]) *
               float(w[p.w_base + ((co * p.in_channels + ci) * p.kernel + ky) * p.kernel + kx]);
      }
    }
  }
  y[p.y_base + i] = ELEMENT(acc);
}
