#pragma once

#include <cstdint>

#include "kernels/matmul.h"

namespace sam2rt::cli {

// The machine's limit the encoder is held to (docs/PERFORMANCE.md, "Bars"):
// oneDNN's GEMM at the encoder MLP's shape (4096 x 384 tokens into 1536
// outputs, Tiny's third stage), on the caller's OpenMP threads, in float32 or
// bfloat16 as the encoder runs. `bench` times it right after each encode, so
// that both see the machine as it is at that moment: on a shared VM the rate
// moves by 10-40% within a minute. Its operands come from the process's buffer
// pool (memory the encode has given back), so it adds no page faults and no
// peak memory to what bench reports.
class GemmProbe {
 public:
  explicit GemmProbe(bool bf16);

  // GFLOP/s of one timing (a few forward calls, ~60 ms at 250 GFLOP/s).
  double gflops() const;

  static constexpr int64_t kRows = 4096, kIn = 384, kOut = 1536;

 private:
  bool bf16_;
  PackedLinear linear_;
};

}  // namespace sam2rt::cli
