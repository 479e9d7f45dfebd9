#version 450
#include "storage.glsl"
#include "gelu.glsl"
// A Linear layer on CPU devices, 16 rows x 1 output per invocation (matmul_blocked.glsl).
#define ROWS_PER 16
#define OUTS_PER 1
#include "matmul_blocked.glsl"
