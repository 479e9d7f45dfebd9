#version 450
#include "storage.glsl"
// LayerNorm over the last axis of [rows, channels] (nn.LayerNorm, biased
// variance): one invocation per row, fp32 statistics in two passes (mean, then
// the mean of squared deviations), no barriers.
layout(local_size_x = 64) in;

layout(std430, binding = 0) readonly buffer X { ELEMENT x[]; };
layout(std430, binding = 1) readonly buffer G { ELEMENT weight[]; };
layout(std430, binding = 2) readonly buffer B { ELEMENT bias[]; };
layout(std430, binding = 3) writeonly buffer Y { ELEMENT y[]; };

layout(push_constant) uniform Push {
  uint rows, channels;
  uint x_base, ldx;
  uint weight_base, bias_base;
  uint y_base, ldy;
  float eps;
} p;

void main() {
  uint r = gl_GlobalInvocationID.x;
  if (r >= p.rows) return;
  uint xi = p.x_base + r * p.ldx, yi = p.y_base + r * p.ldy;
  float sum = 0.0;
  for (uint c = 0; c < p.channels; ++c) sum += float(x[xi + c]);
  float mean = sum / float(p.channels);
  float squares = 0.0;
  for (uint c = 0; c < p.channels; ++c) {
    float d = float(x[xi + c]) - mean;
    squares += d * d;
  }
  float inv_std = 1.0 / sqrt(squares / float(p.channels) + p.eps);
  for (uint c = 0; c < p.channels; ++c) {
    y[yi + c] = ELEMENT((float(x[xi + c]) - mean) * inv_std * float(weight[p.weight_base + c]) +
                        float(bias[p.bias_base + c]));
  }
}
