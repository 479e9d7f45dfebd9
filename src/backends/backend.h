#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "backends/device_tensor.h"
#include "backends/op_types.h"
#include "backends/row_source.h"
#include "core/tensor.h"

namespace sam2rt {

// What one recorded program holds (bench reports it).
struct ProgramStats {
  int64_t ops = 0;            // backend ops it was built from
  int64_t ops_on_device = 0;  // of them, those the device runs (all, on a device backend)
  int64_t dispatches = 0;
};

// Copies of activations between the host and a device backend's memory
// (bench reports them per image, per prompt and per batch of prompts): uploads
// are write() and input(), downloads are download(). What is made resident at
// load (constants, Linear weights) is not counted. Submissions are the
// programs run (each one submission to the device and a wait for it).
struct TransferCounts {
  int64_t uploads = 0;
  int64_t downloads = 0;
  int64_t submissions = 0;
};

// A recorded sequence of ops a device backend replays (docs/BACKENDS.md).
class Program {
 public:
  virtual ~Program() = default;
  virtual ProgramStats stats() const = 0;
};

// The boundary between the model and where its ops run (docs/BACKENDS.md): one
// entry per op of the image encoder and the mask decoder, at the granularity of
// our fused kernels.
// The CPU backend runs each op when called, with exactly the kernel and the
// arguments the model used before (its bits do not change). A device backend
// records them (records() is true): the model runs once between
// begin_program() and end_program() and the program is replayed per image, with
// a new input written into the same tensor. Shape errors throw Error.
// A backend is used from one thread at a time: the models on one backend (the
// encoder, the decoder) hold run_mutex() while they record or run on it.
// Every virtual method has cases in tests/backend_ops_test.cpp, run on each
// backend against plain references; that test reads the declarations below and
// fails for a method without a case, so a new op comes with its cases. The
// operand types are in backends/op_types.h.
class Backend {
 public:
  virtual ~Backend() = default;
  std::mutex& run_mutex() const { return run_mutex_; }
  // "cpu", or "vulkan: <device name>".
  virtual std::string description() const = 0;
  virtual bool records() const = 0;
  // Ops called (run or recorded) since the backend was made.
  virtual int64_t ops_called() const = 0;
  // Transfers since the backend was made; none on the CPU, whose tensors are host memory.
  virtual TransferCounts transfers() const = 0;
  // The most elements of one tensor every op may take whole (a device's
  // storage-buffer binding range; Linear layers split their rows themselves).
  virtual int64_t max_whole_tensor_elements() const = 0;

  // Constants: made resident once (model load), kept while a handle lives.
  virtual DeviceTensor constant(const Tensor& value) = 0;
  virtual DeviceTensor constant_rows(std::shared_ptr<const RowSource> rows) = 0;
  virtual LinearHandle linear(const Tensor& weight, const Tensor& bias, Precision precision) = 0;
  // A tensor kept apart from the activations, contents undefined: state that
  // programs write and later programs read (a device backend's programs use the
  // free activation memory as scratch, which other programs' runs overwrite).
  virtual DeviceTensor persistent(Shape shape) = 0;

  // Activations. Contents of a new tensor are undefined.
  virtual DeviceTensor tensor(Shape shape, ElementType type = ElementType::f32) = 0;
  // A tensor holding `value` (the CPU shares its memory).
  virtual DeviceTensor input(const Tensor& value) = 0;
  // x <- value, before a program that reads x is run.
  virtual void write(const DeviceTensor& x, const Tensor& value) = 0;
  // A host copy of x (the CPU shares its memory), after what writes it has run.
  virtual Tensor download(const DeviceTensor& x) = 0;

  // The ops, each as the CPU kernel of the same name.
  // conv2d_to_hwc: image [1, Cin, H, W], weight [Cout, Cin, k, k], bias [Cout].
  virtual DeviceTensor conv2d_to_hwc(const DeviceTensor& image, const DeviceTensor& weight, const DeviceTensor& bias,
                                     int64_t stride, int64_t padding) = 0;
  // x [h, w, C] += rows (a constant_rows of the same shape).
  virtual void add_rows(DeviceTensor& x, const DeviceTensor& rows) = 0;
  // layer_norm_rows over the last dimension; y is f32 or bf16.
  virtual void layer_norm_rows(const DeviceTensor& x, const DeviceTensor& weight, const DeviceTensor& bias, float eps,
                               DeviceTensor& y) = 0;
  // y (bf16) <- x (f32).
  virtual void convert(const DeviceTensor& x, DeviceTensor& y) = 0;
  // PackedLinear::forward on `rows` dense rows; x and y f32 or bf16.
  virtual void linear_forward(const LinearHandle& layer, const DeviceTensor& x, int64_t rows, DeviceTensor& y,
                              Epilogue epilogue) = 0;
  // y [rows, out] += contract(GELU(expand(x))) for x [rows, in] (f32, or bf16 for
  // bf16 layers): a transformer block's MLP onto its residual. What the two
  // linear_forward calls give through a hidden tensor of the expand layer's
  // output type, which a backend may keep to a row chunk at a time.
  virtual void mlp_forward(const LinearHandle& expand, const LinearHandle& contract, const DeviceTensor& x,
                           int64_t rows, DeviceTensor& y) = 0;
  virtual void windowed_attention(const DeviceTensor& qkv, int64_t window, const DeviceTensor& pad_token,
                                  int64_t heads, bool q_pool, DeviceTensor& out, bool bf16_products) = 0;
  // windowed_attention on the qkv Linear of x [height * width, in] (f32, or bf16
  // for a bf16 layer): what linear_forward into a [height, width, 3C] tensor and
  // windowed_attention on it give, as one op. A backend may keep the qkv to one
  // row of windows at a time (Hiera-Tiny's first pooling block: 151 MB whole).
  virtual void qkv_windowed_attention(const LinearHandle& qkv, const DeviceTensor& x, int64_t height, int64_t width,
                                      int64_t window, const DeviceTensor& pad_token, int64_t heads, bool q_pool,
                                      DeviceTensor& out, bool bf16_products) = 0;
  virtual void attention(const AttentionOperands& operands) = 0;
  // Whether attention() takes operands of these shapes (their tensors are not
  // read): values narrower than the keys run on some backends only.
  virtual bool supports_attention(const AttentionOperands& shapes) const {
    (void)shapes;
    return true;
  }
  virtual void max_pool2x2(const DeviceTensor& x, int64_t channel_offset, int64_t channels, DeviceTensor& y) = 0;
  virtual void add_upsampled_nearest2x(DeviceTensor& x, const DeviceTensor& coarse) = 0;
  virtual void add_channel_vector(DeviceTensor& x, const DeviceTensor& vector) = 0;
  virtual void copy(const DeviceTensor& x, DeviceTensor& y) = 0;
  virtual void hwc_to_nchw(const DeviceTensor& x, DeviceTensor& y) = 0;

  // The mask decoder's own ops (docs/BACKENDS.md; the Linear layers, LayerNorms
  // and attentions use the ones above).
  // y [rows, n] = x [rows, k] w^T for x and w [n, k] any tensors (no bias): the
  // hypernetwork outputs against the upscaled map. With batches > 1, x, w and y
  // are each `batches` equal consecutive blocks, block i of y the product of
  // block i of x and of w (the prompts of a batch).
  virtual void matmul_transposed(const DeviceTensor& x, const DeviceTensor& w, DeviceTensor& y, int64_t batches) = 0;
  // nn.ConvTranspose2d(kernel 2, stride 2) on channels-last maps: x [H, W, Cin],
  // weight [Cin, Cout, 2, 2] (PyTorch layout), bias [Cout] -> y [2H, 2W, Cout],
  // plus `add` unless it is empty: y's shape, or one map of n stacked along H
  // (x [n * h, W, Cin], a batch's maps), which each of them gets.
  virtual void conv_transpose2x2(const DeviceTensor& x, const DeviceTensor& weight, const DeviceTensor& bias,
                                 const DeviceTensor& add, DeviceTensor& y) = 0;
  // y[i] = a[i] + b[i % b.numel()] (y may be a or b; a's size a multiple of
  // b's: one tensor added to each of a batch's).
  virtual void add(const DeviceTensor& a, const DeviceTensor& b, DeviceTensor& y) = 0;
  // In place: the exact (erf) GELU; the sigmoid.
  virtual void gelu(DeviceTensor& x) = 0;
  virtual void sigmoid(DeviceTensor& x) = 0;
  // y[y_offset + i] = x[x_offset + i] for i < count (elements of the flat
  // tensors): rows out of or into a larger tensor.
  virtual void copy_elements(const DeviceTensor& x, int64_t x_offset, DeviceTensor& y, int64_t y_offset,
                             int64_t count) = 0;
  // y[y_offset + r * y_stride + i] = x[x_offset + r * x_stride + i] for r <
  // rows, i < width: the same rows of each prompt of a batch gathered or scattered.
  virtual void copy_rows(const DeviceTensor& x, int64_t x_offset, int64_t x_stride, DeviceTensor& y,
                         int64_t y_offset, int64_t y_stride, int64_t width, int64_t rows) = 0;

  // The video memory modules' own ops (docs/BACKENDS.md).
  // Rotary position encoding (RoPEAttention) in place on the first `rows` rows
  // of x [n, width]: each head's channels, head_dim = 2 * table.dim(1), are
  // pairs (2i, 2i+1) taken as complex numbers and multiplied by table [period,
  // head_dim / 2, 2] (cos, sin), row r by table row r % period (the keys of
  // several memory frames repeat one frame's grid positions).
  virtual void rotary_rows(DeviceTensor& x, int64_t rows, const DeviceTensor& table) = 0;
  // Depthwise nn.Conv2d (groups = channels), stride 1, zero padding, on a
  // channels-last map: x [H, W, C], weight [C, 1, k, k], bias [C] -> y
  // [H + 2p - k + 1, W + 2p - k + 1, C]: the memory encoder's CXBlocks.
  virtual void depthwise_conv2d_hwc(const DeviceTensor& x, const DeviceTensor& weight, const DeviceTensor& bias,
                                    int64_t padding, DeviceTensor& y) = 0;

  // Recording (device backends only; Error on the CPU).
  virtual void begin_program() = 0;
  virtual std::shared_ptr<Program> end_program() = 0;
  virtual void run(Program& program) = 0;

 private:
  mutable std::mutex run_mutex_;
};

// Runs `ops` (backend calls) once: on a device backend recorded into a program
// that is run and dropped, on the CPU as they are called.
template <typename Ops>
void run_once(Backend& backend, Ops ops) {
  if (!backend.records()) {
    ops();
    return;
  }
  backend.begin_program();
  try {
    ops();
  } catch (...) {
    backend.end_program();
    throw;
  }
  backend.run(*backend.end_program());
}

}  // namespace sam2rt
