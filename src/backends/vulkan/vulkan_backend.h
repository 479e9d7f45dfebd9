#pragma once

#include <atomic>
#include <memory>

#include "backends/backend.h"
#include "backends/vulkan/device_arena.h"
#include "backends/vulkan/vulkan_context.h"
#include "backends/vulkan/vulkan_ops.h"

namespace sam2rt {

// The Backend on one Vulkan device (docs/BACKENDS.md): constants and Linear
// weights uploaded when made, activations from an arena of a few large buffers,
// every op recorded as dispatches into the current program (between
// begin_program and end_program) and run by replaying it. Its tensors are f32 to
// the model; the device stores them (and the weights) as `precision` says, and
// write/download convert. bf16 tensors and bf16 products are refused (Error).
// Every tensor, handle and program made by the backend must be destroyed before
// it. One thread at a time.
class VulkanBackend final : public Backend {
 public:
  explicit VulkanBackend(const VulkanContextOptions& options, DevicePrecision precision = DevicePrecision::fp32);
  ~VulkanBackend() override;

  std::string description() const override;
  bool records() const override { return true; }
  int64_t ops_called() const override { return ops_; }
  TransferCounts transfers() const override { return {uploads_.load(), downloads_.load(), submissions_.load()}; }
  int64_t max_whole_tensor_elements() const override;

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
  bool supports_attention(const AttentionOperands& shapes) const override;
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

  const VulkanContext& context() const { return *context_; }
  DevicePrecision precision() const { return ops_library_->precision(); }
  // Device memory of the activation and constant arenas.
  uint64_t activation_bytes() const { return activations_->bytes_reserved(); }
  uint64_t constant_bytes() const { return constants_->bytes_reserved(); }

 private:
  class VulkanProgram;
  // The recorder of the current program, counting one op; Error outside one.
  CommandRecorder& record(const char* op);
  // x <- value, converted to the device's storage type; not counted as a transfer.
  void upload(const DeviceTensor& x, const Tensor& value);

  std::unique_ptr<VulkanContext> context_;
  std::unique_ptr<VulkanOps> ops_library_;
  std::unique_ptr<DeviceArena> constants_, activations_;
  std::shared_ptr<VulkanProgram> current_;
  int64_t ops_ = 0, ops_at_begin_ = 0;
  std::atomic<int64_t> uploads_{0}, downloads_{0}, submissions_{0};  // read by callers on other threads (bench)
};

}  // namespace sam2rt
