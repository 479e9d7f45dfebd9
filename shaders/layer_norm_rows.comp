#version 450
// LayerNorm over the last axis of [rows, channels] (nn.LayerNorm, biased
// variance): one invocation per row, fp32 statistics in two passes (mean, then
// the mean of squared deviations), no barriers.
layout(local_size_x = 64) in;

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer G { float weight[]; };
layout(std430, binding = 2) readonly buffer B { float bias[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };

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
  for (uint c = 0; c < p.channels; ++c) sum += x[xi + c];
  float mean = sum / float(p.channels);
  float squares = 0.0;
  for (uint c = 0; c < p.channels; ++c) {
    float d = x[xi + c] - mean;
    squares += d * d;
  }
  float inv_std = 1.0 / sqrt(squares / float(p.channels) + p.eps);
  for (uint c = 0; c < p.channels; ++c) {
    y[yi + c] = (x[xi + c] - mean) * inv_std * weight[p.weight_base + c] + bias[p.bias_base + c];
  }
}
