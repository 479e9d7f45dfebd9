#pragma once

#include <cstdint>
#include <memory>
#include <utility>

#include "core/tensor.h"

namespace sam2rt {

// Arithmetic of the encoder's GEMMs. bf16: weights and activations rounded to
// bfloat16, products accumulated in float32 (AVX512_BF16 where present).
enum class MatmulPrecision { fp32, bf16 };

// Whether oneDNN can run bfloat16 matmuls on this CPU (it needs AVX-512; also
// false under ONEDNN_MAX_CPU_ISA below it). Probed once.
bool bf16_matmul_supported();

// What the GEMM does to its result before storing it.
enum class MatmulEpilogue {
  none,        // y = x W^T + b
  gelu,        // y = GELU(x W^T + b), exact erf form
  accumulate,  // y = y + (x W^T + b): a residual add into the destination
  relu,        // y = max(0, x W^T + b): the hidden layers of the decoder's MLPs
};

// A Linear layer y[rows, out] = x[rows, in] W^T + b as a oneDNN matmul, one
// primitive cached per (rows, output type, epilogue), made on first use.
// float32 reads the caller's weight in place (construction costs nothing and
// copies nothing); bf16 converts it ONCE, on first use, into the blocked layout
// the primitive wants. x and y are dense row-major. In bf16 precision x is
// bfloat16 (uint16_t); y is float or bfloat16 as asked. Thread-safe; calls run
// on the OpenMP threads, large ones as row chunks handed out dynamically (fair
// to a machine shared with other busy threads).
class PackedLinear {
 public:
  PackedLinear() = default;
  // weight [out, in] (PyTorch layout), bias [out] (may be empty).
  PackedLinear(const Tensor& weight, const Tensor& bias, MatmulPrecision precision);

  int64_t in_features() const { return in_; }
  int64_t out_features() const { return out_; }
  MatmulPrecision precision() const { return precision_; }

  void forward(const float* x, int64_t rows, float* y, MatmulEpilogue epilogue = MatmulEpilogue::none) const;
  void forward(const uint16_t* x, int64_t rows, float* y, MatmulEpilogue epilogue = MatmulEpilogue::none) const;
  void forward(const uint16_t* x, int64_t rows, uint16_t* y, MatmulEpilogue epilogue = MatmulEpilogue::none) const;
  // y[rows, out] = x W^T + b on the calling thread alone, for callers that hand
  // out row chunks to their own OpenMP threads. x is float32 or bfloat16 as the
  // layer's precision; y is float32. The same primitives as forward's row chunks.
  void forward_on_this_thread(const void* x, int64_t rows, float* y) const;

  friend void mlp_forward(const PackedLinear& expand, const PackedLinear& contract, const void* x, int64_t rows,
                          float* y);

 private:
  struct Kernels;
  struct Entry;
  // kernels_->mutex held. one_thread: a primitive for one row chunk, run by one thread.
  const Entry& entry(int64_t rows, bool bf16_out, MatmulEpilogue epilogue, bool one_thread) const;
  // The one-thread primitives for `rows` rows cut into chunks of `chunk`: the full
  // chunks' and the last chunk's (the same one when `chunk` divides `rows`).
  // Takes kernels_->mutex.
  std::pair<const Entry*, const Entry*> chunk_entries(int64_t rows, int64_t chunk, bool bf16_out,
                                                      MatmulEpilogue epilogue) const;
  void run(const void* x, int64_t rows, void* y, bool bf16_out, MatmulEpilogue epilogue) const;
  void run_rows(const Entry& e, const void* x, int64_t rows, void* y, bool bf16_out) const;

  int64_t in_ = 0, out_ = 0;
  MatmulPrecision precision_ = MatmulPrecision::fp32;
  std::shared_ptr<Kernels> kernels_;
};

// A transformer MLP added onto its residual: y[rows, out] += contract(GELU(expand(x))),
// x float32 (fp32 layers) or bfloat16 (bf16 layers), the hidden activations as the
// expand layer's forward would store them (float32 or bfloat16). Large inputs run
// row chunk by row chunk, each chunk through both layers on one thread, so the
// hidden activations (4x the width: 96 MB for Hiera-Tiny's first block) never
// exist whole: only a chunk per thread, reused. Same bits as the two forward calls.
void mlp_forward(const PackedLinear& expand, const PackedLinear& contract, const void* x, int64_t rows, float* y);

}  // namespace sam2rt
