#version 450
#extension GL_EXT_control_flow_attributes : require
#include "storage.glsl"
// nn.ConvTranspose2d(kernel_size=2, stride=2) on channels-last maps, as
// kernels/conv_transpose.h: x [H, W, Cin], weight in PyTorch's [Cin, Cout, 2, 2]
// layout, bias [Cout] -> y [2H, 2W, Cout], plus the same pixel of `add` when
// has_add (the mask decoder's high-resolution features, in the same pass; of a
// batch's maps stacked along H, each gets the one addend map of add_count values).
// Each output pixel has exactly one input pixel, so the layer is the product
// x [H*W, Cin] . weight [Cin, Cout*4] (column o*4 + tap) scattered to the output:
// as matmul_16x8.comp, each invocation computes 16 input pixels x 8 columns of a
// 256x128 tile, so each value it reads serves several products (on lavapipe,
// where every read of a lane is a gather, that is most of the time; one output
// per invocation made this layer most of a Tiny decode there). Each output sums over
// the input channels sequentially in fp32, then adds the bias, then the addend.
// No barriers: invocations past the end return at once. Tiles of pixels run
// along the dispatch's y, then z (more than one axis's groups for big batches).
layout(local_size_x = 16, local_size_y = 16) in;

const uint kPixelsPer = 16, kColumnsPer = 8;  // per invocation, 16 apart

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
  uint columns = 4 * p.out_channels, pixels = p.count / columns;
  uint n0 = gl_WorkGroupID.x * 16 * kColumnsPer + gl_LocalInvocationID.x;
  uint r0 = (gl_WorkGroupID.y + gl_WorkGroupID.z * gl_NumWorkGroups.y) * 16 * kPixelsPer + gl_LocalInvocationID.y;
  if (n0 >= columns || r0 >= pixels) return;
  // Pixels and columns past the end read the last valid one (their sums are not stored).
  uint xi[kPixelsPer], wi[kColumnsPer];
  [[unroll]] for (uint i = 0; i < kPixelsPer; ++i) xi[i] = p.x_base + min(r0 + 16 * i, pixels - 1) * p.in_channels;
  [[unroll]] for (uint j = 0; j < kColumnsPer; ++j) wi[j] = p.w_base + min(n0 + 16 * j, columns - 1);
  float acc[kPixelsPer][kColumnsPer];
  [[unroll]] for (uint i = 0; i < kPixelsPer; ++i) {
    [[unroll]] for (uint j = 0; j < kColumnsPer; ++j) acc[i][j] = 0.0;
  }
  for (uint c = 0; c < p.in_channels; ++c) {
    float xs[kPixelsPer], ws[kColumnsPer];
    [[unroll]] for (uint i = 0; i < kPixelsPer; ++i) xs[i] = float(x[xi[i] + c]);
    [[unroll]] for (uint j = 0; j < kColumnsPer; ++j) ws[j] = float(w[wi[j] + c * columns]);
    [[unroll]] for (uint i = 0; i < kPixelsPer; ++i) {
      [[unroll]] for (uint j = 0; j < kColumnsPer; ++j) acc[i][j] += xs[i] * ws[j];
    }
  }
  [[unroll]] for (uint i = 0; i < kPixelsPer; ++i) {
    uint pixel = r0 + 16 * i;
    if (pixel >= pixels) continue;
    uint in_x = pixel % p.width, in_y = pixel / p.width;
    [[unroll]] for (uint j = 0; j < kColumnsPer; ++j) {
      uint n = n0 + 16 * j;
      if (n >= columns) continue;
      uint o = n / 4, tap = n % 4;
      uint out_y = 2 * in_y + tap / 2, out_x = 2 * in_x + tap % 2;
      uint yi = (out_y * 2 * p.width + out_x) * p.out_channels + o;
      float sum = acc[i][j] + float(b[p.b_base + o]);
      if (p.has_add != 0) sum += float(addend[p.add_base + yi % p.add_count]);
      y[p.y_base + yi] = ELEMENT(sum);
    }
  }
}
