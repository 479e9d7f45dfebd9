#version 450
#include "storage.glsl"
#include "gelu.glsl"
// A Linear layer on CPU devices, 16 rows x 2 outputs per invocation (matmul_blocked.glsl).
#define ROWS_PER 16
#define OUTS_PER 2
#include "matmul_blocked.glsl"
