// A Linear layer on a band of rows: y[r, o] = epilogue(sum_k x[r, k] w[o, k] + b[o]),
// w[o, k] at w_base + o * ldw + k * w_step (PyTorch's [out, in] layout: ldw = in,
// w_step = 1; attention's keys and transposed values take other strides), for
// CPU devices (lavapipe). No barriers and no shared memory (the fastest form
// there, and the exact path): each invocation of a 16x16 workgroup computes
// ROWS_PER x OUTS_PER outputs (rows ty + 16 i, outputs tx + 16 j of the
// workgroup's tile), so each value it reads serves several products instead of
// one; on lavapipe, where every read of a lane is a gather, that is most of
// the time. The including shader sets the block: matmul.comp 4x4 (little waste
// on the few rows of a prompt's tokens), matmul_16xN.comp 16 rows x N outputs
// (N = 1, 2, 4, 8: for the image's thousands of rows, N to fit the layer's
// width; 16x8 is twice as fast as 4x4 there, spilled accumulators costing less
// than gathers).
// Each output sums its products sequentially in k order in fp32 in both: the
// same arithmetic in the same order.
// Epilogues as kernels/matmul.h: 0 none, 1 GELU (erf form), 2 accumulate (y += ...), 3 ReLU.
// A dispatch's z groups are independent products of the same shapes (the mask
// decoder's prompts: each one's hypernetwork outputs against its own upscaled
// map), x, w and y each *_batch elements further on per batch; the bias is shared.
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x = 16, local_size_y = 16) in;

layout(std430, binding = 0) readonly buffer X { ELEMENT x[]; };
layout(std430, binding = 1) readonly buffer W { ELEMENT w[]; };
layout(std430, binding = 2) readonly buffer B { ELEMENT b[]; };
layout(std430, binding = 3) buffer Y { ELEMENT y[]; };

layout(push_constant) uniform Push {
  uint rows, in_features, out_features;
  uint x_base, ldx;  // in floats, from the start of each binding
  uint w_base, b_base;
  uint y_base, ldy;
  uint epilogue, has_bias;
  uint ldw, w_step;
  uint x_batch, w_batch, y_batch;  // batch strides (dispatch z: the batch)
} p;

void main() {
  uint o0 = gl_WorkGroupID.x * 16 * OUTS_PER + gl_LocalInvocationID.x;
  uint r0 = gl_WorkGroupID.y * 16 * ROWS_PER + gl_LocalInvocationID.y;
  uint x_base = p.x_base + gl_WorkGroupID.z * p.x_batch, w_base = p.w_base + gl_WorkGroupID.z * p.w_batch,
       y_base = p.y_base + gl_WorkGroupID.z * p.y_batch;
  // Invocations whose first row or output is past the end have nothing to store
  // (no barriers: they may leave; on lavapipe a group of lanes that all left costs nothing).
  if (r0 >= p.rows || o0 >= p.out_features) return;
  // Other rows and outputs past the end read the last valid one (their sums are not stored).
  uint xi[ROWS_PER], wi[OUTS_PER];
  [[unroll]] for (uint i = 0; i < ROWS_PER; ++i) xi[i] = x_base + min(r0 + 16 * i, p.rows - 1) * p.ldx;
  [[unroll]] for (uint j = 0; j < OUTS_PER; ++j) wi[j] = w_base + min(o0 + 16 * j, p.out_features - 1) * p.ldw;
  float acc[ROWS_PER][OUTS_PER];
  [[unroll]] for (uint i = 0; i < ROWS_PER; ++i) {
    [[unroll]] for (uint j = 0; j < OUTS_PER; ++j) acc[i][j] = 0.0;
  }
  for (uint k = 0; k < p.in_features; ++k) {
    float xs[ROWS_PER], ws[OUTS_PER];
    [[unroll]] for (uint i = 0; i < ROWS_PER; ++i) xs[i] = float(x[xi[i] + k]);
    [[unroll]] for (uint j = 0; j < OUTS_PER; ++j) ws[j] = float(w[wi[j] + k * p.w_step]);
    [[unroll]] for (uint i = 0; i < ROWS_PER; ++i) {
      [[unroll]] for (uint j = 0; j < OUTS_PER; ++j) acc[i][j] += xs[i] * ws[j];
    }
  }
  [[unroll]] for (uint i = 0; i < ROWS_PER; ++i) {
    uint r = r0 + 16 * i;
    if (r >= p.rows) continue;
    [[unroll]] for (uint j = 0; j < OUTS_PER; ++j) {
      uint o = o0 + 16 * j;
      if (o >= p.out_features) continue;
      float sum = acc[i][j];
      if (p.has_bias != 0) sum += float(b[p.b_base + o]);
      uint yi = y_base + r * p.ldy + o;
      if (p.epilogue == 1) {
        sum = gelu(sum);
      } else if (p.epilogue == 2) {
        sum += float(y[yi]);
      } else if (p.epilogue == 3) {
        sum = max(sum, 0.0);
      }
      y[yi] = ELEMENT(sum);
    }
  }
}
