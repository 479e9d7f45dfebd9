#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "backends/backend.h"
#include "kernels/buffer_pool.h"

namespace sam2rt {

// The CPU backend: each op calls today's kernel (src/kernels) with the
// arguments the model passed it before the backend existed, so its results are
// bit for bit those of that code. Activations come from the process's pool
// (BufferPool::shared); constants share the caller's memory. Thread-safe.
class CpuBackend final : public Backend {
 public:
  CpuBackend();

  std::string description() const override { return "cpu"; }
  bool records() const override { return false; }
  int64_t ops_called() const override { return ops_.load(); }
  TransferCounts transfers() const override { return {}; }
  int64_t max_whole_tensor_elements() const override { return INT64_MAX; }

  DeviceTensor constant(const Tensor& value) override;
  DeviceTensor constant_rows(std::shared_ptr<const RowSource> rows) override;
  LinearHandle linear(const Tensor& weight, const Tensor& bias, Precision precision) override;
  DeviceTensor persistent(Shape shape) override;

  DeviceTensor tensor(Shape shape, ElementType type = ElementType::f32) override;
  DeviceTensor input(const Tensor& value) override;
  void write(const DeviceTensor& x, const Tensor& value) override;
  Tensor download(const DeviceTensor& x) override;

  DeviceTensor conv2d_to_hwc(const DeviceTensor& image, const DeviceTensor& weight, const DeviceTensor& bias,
                             int64_t stride, int64_t padding) override;
  void add_rows(DeviceTensor& x, const DeviceTensor& rows) override;
  void layer_norm_rows(const DeviceTensor& x, const DeviceTensor& weight, const DeviceTensor& bias, float eps,
                       DeviceTensor& y) override;
  void convert(const DeviceTensor& x, DeviceTensor& y) override;
  void linear_forward(const LinearHandle& layer, const DeviceTensor& x, int64_t rows, DeviceTensor& y,
                      Epilogue epilogue) override;
  void mlp_forward(const LinearHandle& expand, const LinearHandle& contract, const DeviceTensor& x, int64_t rows,
                   DeviceTensor& y) override;
  void windowed_attention(const DeviceTensor& qkv, int64_t window, const DeviceTensor& pad_token, int64_t heads,
                          bool q_pool, DeviceTensor& out, bool bf16_products) override;
  void qkv_windowed_attention(const LinearHandle& qkv, const DeviceTensor& x, int64_t height, int64_t width,
                              int64_t window, const DeviceTensor& pad_token, int64_t heads, bool q_pool,
                              DeviceTensor& out, bool bf16_products) override;
  void attention(const AttentionOperands& operands) override;
  void max_pool2x2(const DeviceTensor& x, int64_t channel_offset, int64_t channels, DeviceTensor& y) override;
  void add_upsampled_nearest2x(DeviceTensor& x, const DeviceTensor& coarse) override;
  void add_channel_vector(DeviceTensor& x, const DeviceTensor& vector) override;
  void copy(const DeviceTensor& x, DeviceTensor& y) override;
  void hwc_to_nchw(const DeviceTensor& x, DeviceTensor& y) override;

  void matmul_transposed(const DeviceTensor& x, const DeviceTensor& w, DeviceTensor& y, int64_t batches) override;
  void conv_transpose2x2(const DeviceTensor& x, const DeviceTensor& weight, const DeviceTensor& bias,
                         const DeviceTensor& add, DeviceTensor& y) override;
  void add(const DeviceTensor& a, const DeviceTensor& b, DeviceTensor& y) override;
  void gelu(DeviceTensor& x) override;
  void sigmoid(DeviceTensor& x) override;
  void copy_elements(const DeviceTensor& x, int64_t x_offset, DeviceTensor& y, int64_t y_offset,
                     int64_t count) override;
  void copy_rows(const DeviceTensor& x, int64_t x_offset, int64_t x_stride, DeviceTensor& y, int64_t y_offset,
                 int64_t y_stride, int64_t width, int64_t rows) override;

  void rotary_rows(DeviceTensor& x, int64_t rows, const DeviceTensor& table) override;
  void depthwise_conv2d_hwc(const DeviceTensor& x, const DeviceTensor& weight, const DeviceTensor& bias,
                            int64_t padding, DeviceTensor& y) override;

  void begin_program() override;
  std::shared_ptr<Program> end_program() override;
  void run(Program& program) override;

 private:
  BufferPool pool_ = BufferPool::shared();  // a copy shares the arena
  std::atomic<int64_t> ops_{0};
};

}  // namespace sam2rt
