// The CPU backend's fused ops against the kernels they stand for.
#include "backends/cpu_backend.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/error.h"
#include "kernels/bf16.h"
#include "kernels/matmul.h"
#include "kernels/window_attention.h"
#include "random_tensor.h"

namespace sam2rt::testing {
namespace {

struct WindowCase {
  int64_t height, width, window, heads;
  bool q_pool;
  Precision precision;
};

// qkv_windowed_attention runs one row of windows at a time when the windows
// tile the rows (the whole grid otherwise): every output must have the bits of
// the whole qkv Linear followed by windowed_attention on the whole grid.
TEST(CpuBackend, QkvWindowedAttentionIsTheLinearThenTheAttentionBitForBit) {
  const int64_t in = 24, channels = 16;
  const Tensor weight = random_tensor({3 * channels, in}, 41, 0.3f);
  const Tensor bias = random_tensor({3 * channels}, 42);
  for (const WindowCase& c : {WindowCase{16, 12, 4, 2, false, Precision::fp32},  // bands of 4 rows
                              WindowCase{16, 12, 4, 2, true, Precision::fp32},   // bands, q pooled
                              WindowCase{14, 10, 4, 4, false, Precision::fp32},  // 14 rows: whole grid
                              WindowCase{12, 10, 4, 2, true, Precision::fp32},   // padded columns
                              WindowCase{16, 12, 4, 2, true, Precision::bf16}}) {
    SCOPED_TRACE(std::to_string(c.height) + "x" + std::to_string(c.width) + " window " + std::to_string(c.window) +
                 (c.q_pool ? " pooled" : "") + " " + precision_name(c.precision));
    if (c.precision == Precision::bf16 && !bf16_matmul_supported()) continue;
    const Tensor x = random_tensor({c.height, c.width, in}, 43);
    const int64_t tokens = c.height * c.width;
    const PackedLinear layer(weight, bias,
                             c.precision == Precision::bf16 ? MatmulPrecision::bf16 : MatmulPrecision::fp32);
    Tensor qkv({c.height, c.width, 3 * channels});
    std::vector<uint16_t> x16(static_cast<size_t>(x.numel()));
    if (c.precision == Precision::bf16) {
      convert_to_bf16(x.data(), x16.data(), x.numel());
      layer.forward(x16.data(), tokens, qkv.data());
    } else {
      layer.forward(x.data(), tokens, qkv.data());
    }
    const int64_t out_height = c.q_pool ? c.height / 2 : c.height, out_width = c.q_pool ? c.width / 2 : c.width;
    Tensor expected({out_height, out_width, channels});
    windowed_attention(qkv, c.window, bias.data(), c.heads, c.q_pool, expected);

    CpuBackend backend;
    const LinearHandle handle = backend.linear(weight, bias, c.precision);
    DeviceTensor device_x = backend.input(x);
    if (c.precision == Precision::bf16) {
      device_x = backend.tensor(x.shape(), ElementType::bf16);
      backend.convert(backend.input(x), device_x);
    }
    DeviceTensor out = backend.tensor({out_height, out_width, channels});
    backend.qkv_windowed_attention(handle, device_x, c.height, c.width, c.window, backend.constant(bias), c.heads,
                                   c.q_pool, out, false);
    const Tensor actual = backend.download(out);
    for (int64_t i = 0; i < expected.numel(); ++i) ASSERT_EQ(actual[i], expected[i]) << i;
  }
}

TEST(CpuBackend, QkvWindowedAttentionRefusesTooFewTokensAndAMismatchedType) {
  const Tensor weight = random_tensor({48, 24}, 44), bias = random_tensor({48}, 45);
  CpuBackend backend;
  const LinearHandle handle = backend.linear(weight, bias, Precision::fp32);
  const DeviceTensor pad = backend.constant(bias);
  DeviceTensor out = backend.tensor({8, 8, 16});
  EXPECT_THROW(backend.qkv_windowed_attention(handle, backend.input(random_tensor({7, 8, 24}, 46)), 8, 8, 4, pad, 2,
                                              false, out, false),
               Error);
  DeviceTensor as_bf16 = backend.tensor({8, 8, 24}, ElementType::bf16);
  EXPECT_THROW(backend.qkv_windowed_attention(handle, as_bf16, 8, 8, 4, pad, 2, false, out, false), Error);
}

}  // namespace
}  // namespace sam2rt::testing
