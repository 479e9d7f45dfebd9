#version 450
#include "storage.glsl"
// nn.ConvTranspose2d(kernel_size=2, stride=2) on channels-last maps, as
// kernels/conv_transpose.h: x [H, W, Cin], weight in PyTorch's [Cin, Cout, 2, 2]
// layout, bias [Cout] -> y [2H, 2W, Cout], plus the same pixel of `add` when
// has_add (the mask decoder's high-resolution features, in the same pass; of a
// batch's maps stacked along H, each gets the one addend map of add_count values). Each
// output pixel has exactly one input pixel: one invocation per output value,
// sequential fp32 sum over the input channels, then bias, then the addend.
layout(local_size_x = 64) in;

layout(std430, binding = 0) readonly buffer X { ELEMENT x[]; };
layout(std430, binding = 1) readonly buffer W { ELEMENT w[]; };
layout(std430, binding = 2) readonly buffer B { ELEMENT b[]; };
layout(std430, binding = 3) readonly buffer A { ELEMENT addend[]; };
layout(std430, binding = 4) writeonly buffer Y { ELEMENT y[]; };

layout(push_constant) uniform Push {
  uint count;  // 2H * 2W * Cout
  uint width, in_channels, out_channels, has_add;
  uint x_base, w_base, b_base, add_base, y_base;
  uint add_count;  // values of one addend map: count, or a stacked map's
} p;

void main() {
  uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  if (i >= p.count) return;
  uint o = i % p.out_channels, pixel = i / p.out_channels;
  uint out_x = pixel % (2 * p.width), out_y = pixel / (2 * p.width);
  uint tap = (out_y % 2) * 2 + out_x % 2;
  uint xi = p.x_base + ((out_y / 2) * p.width + out_x / 2) * p.in_channels;
  uint wi = p.w_base + o * 4 + tap, w_stride = p.out_channels * 4;
  float acc = 0.0;
  for (uint c = 0; c < p.in_channels; ++c) acc += float(x[xi + c]) * float(w[wi + c * w_stride]);
  acc += float(b[p.b_base + o]);
  if (p.has_add != 0) acc += float(addend[p.add_base + i % p.add_count]);
  y[p.y_base + i] = ELEMENT(acc);
}
