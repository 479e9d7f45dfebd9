#version 450
#extension GL_EXT_control_flow_attributes : require
#include "storage.glsl"
// nn.Conv2d on one image, as kernels/conv2d.h's conv2d_to_hwc: input [1, Cin, H, W]
// (NCHW), weight [Cout, Cin, k, k], bias [Cout], zero padding; output token-major
// [OH, OW, Cout] (Hiera's patch embed: 7x7, stride 4, padding 3). Each output is
// the bias, then the products added in (cin, ky, kx) order in fp32; taps in the
// padding add nothing. Each invocation of a 16x16 workgroup computes 8 output
// pixels x 8 channels (pixels ty + 16 i, channels tx + 16 j of a 128 x 128
// tile), so each value it reads serves eight products (on lavapipe every read
// of a lane is a gather; one output per invocation took 9.6 s of a Tiny encode).
// No barriers: invocations past the end return at once.
layout(local_size_x = 16, local_size_y = 16) in;

const uint kPixelsPer = 8, kChannelsPer = 8;

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
  uint pixels = p.count / p.out_channels;
  uint c0 = gl_WorkGroupID.x * 16 * kChannelsPer + gl_LocalInvocationID.x;
  uint p0 = gl_WorkGroupID.y * 16 * kPixelsPer + gl_LocalInvocationID.y;
  if (c0 >= p.out_channels || p0 >= pixels) return;
  // Pixels and channels past the end compute the last valid one's (not stored).
  int top[kPixelsPer], left[kPixelsPer];
  [[unroll]] for (uint i = 0; i < kPixelsPer; ++i) {
    uint pixel = min(p0 + 16 * i, pixels - 1);
    top[i] = int(pixel / p.out_width) * int(p.stride) - int(p.padding);
    left[i] = int(pixel % p.out_width) * int(p.stride) - int(p.padding);
  }
  uint wi[kChannelsPer];
  float acc[kPixelsPer][kChannelsPer];
  [[unroll]] for (uint j = 0; j < kChannelsPer; ++j) {
    uint co = min(c0 + 16 * j, p.out_channels - 1);
    wi[j] = p.w_base + co * p.in_channels * p.kernel * p.kernel;
    [[unroll]] for (uint i = 0; i < kPixelsPer; ++i) acc[i][j] = float(b[p.b_base + co]);
  }
  uint tap = 0;  // (ci * k + ky) * k + kx
  for (uint ci = 0; ci < p.in_channels; ++ci) {
    for (uint ky = 0; ky < p.kernel; ++ky) {
      for (uint kx = 0; kx < p.kernel; ++kx, ++tap) {
        float ws[kChannelsPer];
        [[unroll]] for (uint j = 0; j < kChannelsPer; ++j) ws[j] = float(w[wi[j] + tap]);
        [[unroll]] for (uint i = 0; i < kPixelsPer; ++i) {
          int iy = top[i] + int(ky), ix = left[i] + int(kx);
          if (iy < 0 || iy >= int(p.height) || ix < 0 || ix >= int(p.width)) continue;
          float xs = float(x[p.x_base + (ci * p.height + uint(iy)) * p.width + uint(ix)]);
          [[unroll]] for (uint j = 0; j < kChannelsPer; ++j) acc[i][j] += xs * ws[j];
        }
      }
    }
  }
  [[unroll]] for (uint i = 0; i < kPixelsPer; ++i) {
    uint pixel = p0 + 16 * i;
    if (pixel >= pixels) continue;
    [[unroll]] for (uint j = 0; j < kChannelsPer; ++j) {
      uint co = c0 + 16 * j;
      if (co < p.out_channels) y[p.y_base + pixel * p.out_channels + co] = ELEMENT(acc[i][j]);
    }
  }
}
