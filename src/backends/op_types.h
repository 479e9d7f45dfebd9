#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "backends/device_tensor.h"

namespace sam2rt {

// The operands of the Backend's ops (backends/backend.h) that are not tensors.
// The interface owns them so that it names no kernel; the CPU backend maps them
// to its kernels' own types.

// Arithmetic of a backend's Linear layers (the encoder's GEMMs). bf16: weights
// and activations rounded to bfloat16, products accumulated in float32.
enum class Precision { fp32, bf16 };

const char* precision_name(Precision precision);
// The inverse of precision_name; Error for any other name.
Precision parse_precision(std::string_view name);

// What linear_forward does to its result before storing it.
enum class Epilogue {
  none,        // y = x W^T + b
  gelu,        // y = GELU(x W^T + b), exact erf form
  accumulate,  // y = y + (x W^T + b): a residual add into the destination
  relu,        // y = max(0, x W^T + b): the hidden layers of the decoder's MLPs
};

// A Linear layer made resident by a backend (weights packed or uploaded once).
struct LinearHandle {
  std::shared_ptr<const void> impl;  // the backend's own
  int64_t in_features = 0, out_features = 0;
  Precision precision = Precision::fp32;
};

// Operands of attention(): as kernels/attention.h's AttentionArgs, with q, k, v
// and out as element offsets (and row strides, in elements) into tensors.
// value_dim: the values' (and the output's) width per head, when narrower
// than head_dim (0: head_dim); Backend::supports_attention says where.
struct AttentionOperands {
  int64_t nq = 0, nk = 0, heads = 1, head_dim = 0;
  int64_t value_dim = 0;
  DeviceTensor q, k, v, out;
  int64_t q_offset = 0, k_offset = 0, v_offset = 0;
  int64_t ldq = 0, ldk = 0, ldv = 0, ldo = 0;
  float scale = 1.0f;
  bool bf16_products = false;
  // `batches` independent attentions of these shapes (the mask decoder's prompts
  // of one batch): batch i reads q, k and v and writes out i * *_batch_stride
  // elements further on. A stride of 0 is an operand every batch shares.
  int64_t batches = 1;
  int64_t q_batch_stride = 0, k_batch_stride = 0, v_batch_stride = 0, o_batch_stride = 0;
};

}  // namespace sam2rt
