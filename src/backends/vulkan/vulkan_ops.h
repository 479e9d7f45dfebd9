#pragma once

#include <cstdint>
#include <string>

#include "backends/device_precision.h"
#include "backends/op_types.h"
#include "backends/vulkan/command_recorder.h"
#include "backends/vulkan/compute_pipeline.h"
#include "backends/vulkan/device_buffer.h"
#include "core/tensor.h"

namespace sam2rt {

// Elements [offset, offset + count) of a device buffer: one operand of a kernel.
// An element is a float, or a half on an fp16 backend (VulkanOps::element_bytes).
struct DeviceElements {
  const DeviceBuffer* buffer = nullptr;
  uint64_t offset = 0;  // in elements
  uint64_t count = 0;
};

inline DeviceElements all_elements(const DeviceBuffer& buffer, uint64_t element_bytes = sizeof(float)) {
  return {&buffer, 0, buffer.bytes() / element_bytes};
}

// Bytes of one stored element.
inline uint64_t element_bytes(DevicePrecision precision) { return precision == DevicePrecision::fp16 ? 2 : 4; }

// count floats as the device stores them: in place for fp32, narrowed to halves
// (round to nearest even) for fp16.
void upload_elements(DeviceBuffer& buffer, DevicePrecision precision, const float* values, uint64_t count,
                     uint64_t element_offset);
// The inverse: count stored elements widened to floats.
void download_elements(const DeviceBuffer& buffer, DevicePrecision precision, float* values, uint64_t count,
                       uint64_t element_offset);

// A Linear layer resident on the device: weight [out, in] (PyTorch layout), bias [out] or none.
struct DeviceLinear {
  DeviceBuffer weight, bias;
  int64_t in_features = 0, out_features = 0;
  bool has_bias = false;
};

DeviceLinear upload_linear(const VulkanContext& context, const Tensor& weight, const Tensor& bias,
                           DevicePrecision precision = DevicePrecision::fp32);

// Operands of attention(): as kernels/attention.h's AttentionArgs (strides in elements).
struct DeviceAttention {
  int64_t nq = 0, nk = 0, heads = 1, head_dim = 0;
  int64_t value_dim = 0;  // 0: head_dim; narrower values go through the scores
  int64_t values() const { return value_dim > 0 ? value_dim : head_dim; }
  DeviceElements q, k, v, out;
  int64_t ldq = 0, ldk = 0, ldv = 0, ldo = 0;
  float scale = 1.0f;
  // [VulkanOps::scores_rows, nk] scratch for the scores (unused where that is 0).
  DeviceElements scores;
  // `batches` attentions of these shapes, batch i's operands i * *_batch
  // elements further on (0: shared by every batch): AttentionOperands' batches.
  int64_t batches = 1;
  int64_t q_batch = 0, k_batch = 0, v_batch = 0, o_batch = 0;
};

// The encoder's and the mask decoder's ops as Vulkan kernels, on fp32 or fp16 storage (fp32 arithmetic
// either way): the pipelines are built once (per model) and each call records
// one or more dispatches into a recorder. Each op has the semantics of the CPU
// kernel named in its comment and is tested against it
// (tests/vulkan_ops_test.cpp). Shape errors throw Error before anything is
// recorded. fp16 needs the device's storageBuffer16BitAccess (Error otherwise).
class VulkanOps {
 public:
  explicit VulkanOps(const VulkanContext& context, DevicePrecision precision = DevicePrecision::fp32);

  DevicePrecision precision() const { return precision_; }
  uint64_t element_bytes() const { return sam2rt::element_bytes(precision_); }

  // PackedLinear::forward: y[rows, out] (=, GELU of, += or ReLU of) x[rows, in] W^T + b,
  // dense rows. Split into bands of rows whose bindings fit max_binding_bytes.
  // On GPUs (VulkanContext::tiled_kernels) the shared-memory tiled kernel, same
  // arithmetic in the same order.
  void linear(CommandRecorder& recorder, const DeviceLinear& layer, DeviceElements x, int64_t rows, DeviceElements y,
              Epilogue epilogue) const;
  // linear() with the weight [out, in] and bias [out] given as elements (bias
  // without a buffer: none): also the product of two activations, such as the
  // mask decoder's hypernetwork outputs [tokens, C] with its upscaled map [pixels, C].
  // With batches > 1, x, weight and y each hold `batches` consecutive blocks of
  // those shapes, block i of y the product of block i of x and of the weight
  // (the bias shared): one dispatch (its z groups) per band, the batch's
  // blocks of x and y in the same bindings.
  void matmul(CommandRecorder& recorder, DeviceElements x, int64_t rows, DeviceElements weight, DeviceElements bias,
              int64_t in_features, int64_t out_features, DeviceElements y, Epilogue epilogue,
              int64_t batches = 1) const;
  // conv_transpose_2x2_stride2 on channels-last maps: x [height, width,
  // in_channels], weight [in_channels, out_channels, 2, 2] (PyTorch layout), bias
  // [out_channels] -> y [2 * height, 2 * width, out_channels], plus `add` (laid out
  // as y) when it has a buffer. add_count (0: all of y) is the size of one
  // addend map, which each of the maps stacked along the height gets (a batch's).
  void conv_transpose2x2(CommandRecorder& recorder, DeviceElements x, int64_t height, int64_t width,
                         int64_t in_channels, DeviceElements weight, DeviceElements bias, int64_t out_channels,
                         DeviceElements add, DeviceElements y, int64_t add_count = 0) const;
  // In place on `count` values: the exact GELU (gelu_exact_inplace) or the
  // sigmoid (sigmoid_inplace).
  enum class Activation : uint32_t { gelu = 0, sigmoid = 1 };
  void activation(CommandRecorder& recorder, DeviceElements x, int64_t count, Activation kind) const;
  // layer_norm_rows: dense [rows, channels] -> y, weight and bias [channels].
  void layer_norm_rows(CommandRecorder& recorder, DeviceElements x, int64_t rows, int64_t channels,
                       DeviceElements weight, DeviceElements bias, float eps, DeviceElements y) const;
  // softmax_rows, in place on dense [rows, cols], of scale * x; at most
  // kMaxSoftmaxColumns columns: three passes of four columns per loop iteration
  // within llvmpipe's 65535 iterations per invocation.
  static constexpr int64_t kMaxSoftmaxColumns = 4 * (65535 / 3);
  void softmax_rows(CommandRecorder& recorder, DeviceElements x, int64_t rows, int64_t cols, float scale = 1.0f) const;
  // attention, args.batches of them in one dispatch (its z groups). Heads of at
  // most 128 channels take a fused kernel: on GPUs the one that stages keys
  // and values through shared memory, same arithmetic in the same order; a
  // head_dim that is not a multiple of 4 a scalar kernel (the micro config's
  // decoder), for at most 65535 / (2 + 3 * head_dim) keys. Where scores_rows is
  // not 0, each head goes through args.scores instead; values narrower than
  // the keys (args.value_dim) only there.
  void attention(CommandRecorder& recorder, const DeviceAttention& args) const;
  // Rows of the [rows, nk] scores scratch attention() needs, 0 where it runs a
  // fused kernel. Through the scores, each head is the barrier-free GEMM
  // (scores = Q K^T), softmax_rows and the GEMM (scores V), `rows` queries at a
  // time:
  // - heads wider than 128 channels (Tiny's memory attention: one head of 256),
  //   which the fused kernels cannot hold in registers, on every device, in
  //   blocks of queries whose scores fit one storage-buffer binding (128 MiB
  //   on lavapipe: 1167 queries against 28 736 memory tokens);
  // - on CPU devices (lavapipe) the fused kernel keeps a head's query and sums
  //   per invocation, which llvmpipe holds in memory, not registers; from
  //   kScoresFromKeys keys and kScoresFromQueries queries on, all queries at
  //   once are faster. Fewer queries (the mask decoder's tokens against the
  //   image) keep the fused kernel: their GEMMs are a few workgroups, each one
  //   lavapipe thread, and cost ten times more there.
  // fp32 storage only (fp16 scores would round the probabilities), at most
  // 65535 keys (the values GEMM loops over them, within llvmpipe's limit).
  int64_t scores_rows(const DeviceAttention& args) const;
  static constexpr int64_t kScoresFromKeys = 1024;
  static constexpr int64_t kScoresFromQueries = 64;
  // windowed_attention: qkv [height, width, 3 * channels], pad_token [3 * channels],
  // out [H', W', channels] (H' = height / 2 with q_pool).
  void windowed_attention(CommandRecorder& recorder, DeviceElements qkv, int64_t height, int64_t width,
                          int64_t channels, int64_t window, DeviceElements pad_token, int64_t heads, bool q_pool,
                          DeviceElements out) const;
  // max_pool2x2_into: x [n, height, width, total_channels], channels
  // [channel_offset, channel_offset + channels) -> y [n, height/2, width/2, channels].
  void max_pool2x2(CommandRecorder& recorder, DeviceElements x, int64_t n, int64_t height, int64_t width,
                   int64_t total_channels, int64_t channel_offset, int64_t channels, DeviceElements y) const;
  // add_upsampled_nearest2x_inplace: x [2 * height, 2 * width, channels] +=
  // nearest 2x upsampling of coarse [height, width, channels].
  void add_upsampled_nearest2x(CommandRecorder& recorder, DeviceElements x, DeviceElements coarse, int64_t height,
                               int64_t width, int64_t channels) const;
  // hwc_to_nchw: x [height, width, channels] -> y [1, channels, height, width].
  void hwc_to_nchw(CommandRecorder& recorder, DeviceElements x, int64_t height, int64_t width, int64_t channels,
                   DeviceElements y) const;
  // conv2d_to_hwc: x [1, in_channels, height, width], weight [out_channels,
  // in_channels, kernel, kernel], bias [out_channels] -> y [OH, OW, out_channels].
  void conv2d_to_hwc(CommandRecorder& recorder, DeviceElements x, int64_t in_channels, int64_t height, int64_t width,
                     DeviceElements weight, DeviceElements bias, int64_t out_channels, int64_t kernel, int64_t stride,
                     int64_t padding, DeviceElements y) const;
  // y[i] = x[i] + addend[i % period] for i < count (add_channel_vector_inplace,
  // the position-embedding add); without an addend (buffer null) a copy. x and y
  // may be the same elements.
  void add_periodic(CommandRecorder& recorder, DeviceElements x, DeviceElements addend, int64_t period, int64_t count,
                    DeviceElements y) const;
  // y[r * y_stride + i] = x[r * x_stride + i] for r < rows, i < width: rows of
  // every prompt of a batch gathered or scattered in one dispatch.
  void copy_rows(CommandRecorder& recorder, DeviceElements x, int64_t x_stride, DeviceElements y, int64_t y_stride,
                 int64_t width, int64_t rows) const;
  // rotate_pairs_rows in place on x [rows, width]: each head's value pairs
  // times table [period, pairs, 2] (cos, sin), row r by table row r % period.
  void rotary_rows(CommandRecorder& recorder, DeviceElements x, int64_t rows, int64_t width, DeviceElements table,
                   int64_t period, int64_t pairs) const;
  // depthwise_conv2d_hwc: x [height, width, channels], weight [channels, 1,
  // kernel, kernel], bias [channels], stride 1, zero padding -> y [OH, OW, channels].
  void depthwise_conv2d_hwc(CommandRecorder& recorder, DeviceElements x, int64_t height, int64_t width,
                            int64_t channels, DeviceElements weight, DeviceElements bias, int64_t kernel,
                            int64_t padding, DeviceElements y) const;

 private:
  // A kernel's binding of elements [first, first + count) of an operand.
  struct Bound;
  Bound bind(const DeviceElements& operand, uint64_t first, uint64_t count, const std::string& op,
             const char* name) const;
  // Records an elementwise kernel over `count` values as a 2D grid of groups
  // where one row of them would exceed the device's count.
  template <class Push>
  void dispatch_elements(CommandRecorder& recorder, const ComputePipeline& pipeline,
                         std::initializer_list<BufferRange> bindings, const Push& push, int64_t count) const;

  // y[r, o] = epilogue(sum_k x[r * ldx + k] w[o * ldw + k * w_step] + b[o]) into
  // y[r * ldy + o]: linear(), matmul() and the scores path of attention(). In
  // `batches` batches, batch i's x, w and y *_batch * i elements further on.
  struct Gemm {
    DeviceElements x{}, weight{}, bias{}, y{};  // bias without a buffer: none
    int64_t rows = 0, in = 0, out = 0, ldx = 0, ldw = 0, w_step = 1, ldy = 0;
    Epilogue epilogue = Epilogue::none;
    int64_t batches = 1, x_batch = 0, w_batch = 0, y_batch = 0;
  };
  void gemm(CommandRecorder& recorder, const Gemm& g, const std::string& op) const;
  void attention_through_scores(CommandRecorder& recorder, const DeviceAttention& args, int64_t rows) const;

  const VulkanContext& context_;
  DevicePrecision precision_;
  bool tiled_;  // the *_tiled_ kernels (GPUs) rather than the barrier-free ones (CPU devices: lavapipe)
  ComputePipeline matmul_, matmul_16x1_, matmul_16x2_, matmul_16x4_, matmul_16x8_, matmul_tiled_, layer_norm_rows_,
      softmax_rows_, attention_, attention_tiled_, attention_narrow_, windowed_attention_, max_pool2x2_,
      add_upsampled_nearest2x_, hwc_to_nchw_, conv2d_to_hwc_, add_periodic_, conv_transpose2x2_to_hwc_, activation_,
      copy_rows_, rotary_rows_, depthwise_conv2d_hwc_;
};

}  // namespace sam2rt
