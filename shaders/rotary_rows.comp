#version 450
#include "storage.glsl"
// Rotary position encoding in place (Backend::rotary_rows): value pair i of
// row r of x (channels 2i, 2i+1 as a complex number) times the table's (cos,
// sin) of row r % period, pair i % pairs (each head's pairs take the same
// angles). One invocation per pair; rows past `count` pairs are left alone
// (the memory attention's object-pointer keys).
layout(local_size_x = 64) in;

layout(std430, binding = 0) buffer X { ELEMENT x[]; };
layout(std430, binding = 1) readonly buffer Table { ELEMENT table[]; };

layout(push_constant) uniform Push {
  uint count;       // rows * row_pairs
  uint row_pairs;   // width / 2
  uint pairs;       // head_dim / 2: the table's pairs per row
  uint period;      // the table's rows
  uint x_base, table_base;
} p;

void main() {
  uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  if (i >= p.count) return;
  uint row = i / p.row_pairs, pair = i % p.row_pairs;
  uint angle = p.table_base + ((row % p.period) * p.pairs + pair % p.pairs) * 2;
  uint at = p.x_base + 2 * i;
  float re = float(x[at]), im = float(x[at + 1]);
  float c = float(table[angle]), s = float(table[angle + 1]);
  x[at] = ELEMENT(re * c - im * s);
  x[at + 1] = ELEMENT(re * s + im * c);
}
