#include "gemm_probe.h"

#include <chrono>
#include <memory>

#include "kernels/bf16.h"
#include "kernels/buffer_pool.h"

namespace sam2rt::cli {

namespace {

constexpr int kCallsPerTiming = 3;

// Deterministic values of the size of activations and weights (what they are
// does not change a GEMM's speed; NaN or denormals could).
void fill_pattern(float* values, int64_t count, float scale) {
  for (int64_t i = 0; i < count; ++i) values[i] = scale * static_cast<float>((i * 7919) % 2001 - 1000) / 1000.0f;
}

Tensor pattern(Shape shape, float scale) {
  Tensor t(std::move(shape));
  fill_pattern(t.data(), t.numel(), scale);
  return t;
}

}  // namespace

GemmProbe::GemmProbe(bool bf16)
    : bf16_(bf16),
      linear_(pattern({kOut, kIn}, 0.05f), pattern({kOut}, 0.1f), bf16 ? MatmulPrecision::bf16 : MatmulPrecision::fp32) {
  gflops();  // makes the primitives
}

double GemmProbe::gflops() const {
  BufferPool& pool = BufferPool::shared();
  Tensor x = pool.tensor({kRows, kIn}), y = pool.tensor({kRows, kOut});
  fill_pattern(x.data(), x.numel(), 1.0f);
  std::shared_ptr<void> x_bf16;
  if (bf16_) {
    x_bf16 = pool.bytes(static_cast<size_t>(x.numel()) * sizeof(uint16_t));
    convert_to_bf16(x.data(), static_cast<uint16_t*>(x_bf16.get()), x.numel());
  }
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kCallsPerTiming; ++i) {
    if (bf16_) {
      linear_.forward(static_cast<const uint16_t*>(x_bf16.get()), kRows, y.data());
    } else {
      linear_.forward(x.data(), kRows, y.data());
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return 2.0 * kCallsPerTiming * static_cast<double>(kRows * kIn * kOut) / seconds * 1e-9;
}

}  // namespace sam2rt::cli
