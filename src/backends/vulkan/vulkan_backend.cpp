#include "backends/vulkan/vulkan_backend.h"

#include <string>

#include "backends/vulkan/command_recorder.h"
#include "backends/vulkan/make_vulkan_backend.h"
#include "core/error.h"

namespace sam2rt {

namespace {

// Chunk sizes of the arenas: a few chunks hold an encode's activations (Tiny
// at 1024 peaks near 0.5 GB) and every constant of a model.
constexpr uint64_t kActivationChunkBytes = uint64_t{256} << 20;
constexpr uint64_t kConstantChunkBytes = uint64_t{64} << 20;

// The arena range of a float32 tensor of this backend.
const ArenaRange& range_of(const DeviceTensor& x, const char* op) {
  if (x.empty()) throw Error(std::string("vulkan backend: ") + op + ": empty tensor");
  if (x.type() != ElementType::f32) throw Error(std::string("vulkan backend: ") + op + ": only float32 tensors");
  const auto& range = *static_cast<const ArenaRange*>(x.storage().get());
  if (static_cast<uint64_t>(x.numel()) > range.count) {
    throw Error(std::string("vulkan backend: ") + op + ": tensor " + shape_to_string(x.shape()) +
                " is larger than its storage");
  }
  return range;
}

DeviceElements elements(const DeviceTensor& x, const char* op) { return range_of(x, op).elements(); }

// Elements of x from element `offset` on.
DeviceElements elements_from(const DeviceTensor& x, int64_t offset, const char* op) {
  DeviceElements range = elements(x, op);
  if (offset < 0 || static_cast<uint64_t>(offset) > range.count) {
    throw Error(std::string("vulkan backend: ") + op + ": offset outside its tensor");
  }
  range.offset += static_cast<uint64_t>(offset);
  range.count -= static_cast<uint64_t>(offset);
  return range;
}

void refuse_bf16(bool bf16, const char* op) {
  if (bf16) throw Error(std::string("vulkan backend: ") + op + ": bf16 runs on the CPU only; the device computes in fp32");
}

DeviceTensor tensor_on(DeviceArena& arena, Shape shape) {
  std::shared_ptr<ArenaRange> range = arena.allocate(static_cast<uint64_t>(shape_numel(shape)));
  return DeviceTensor(std::move(shape), ElementType::f32, std::move(range));
}

}  // namespace

class VulkanBackend::VulkanProgram final : public Program {
 public:
  explicit VulkanProgram(const VulkanContext& context) : recorder(context) {}
  ProgramStats stats() const override { return {ops, ops, static_cast<int64_t>(recorder.dispatch_count())}; }

  CommandRecorder recorder;
  int64_t ops = 0;
};

VulkanBackend::VulkanBackend(const VulkanContextOptions& options, DevicePrecision precision)
    : context_(std::make_unique<VulkanContext>(options)),
      ops_library_(std::make_unique<VulkanOps>(*context_, precision)),
      constants_(std::make_unique<DeviceArena>(*context_, kConstantChunkBytes, ops_library_->element_bytes())),
      activations_(std::make_unique<DeviceArena>(*context_, kActivationChunkBytes, ops_library_->element_bytes())) {}

VulkanBackend::~VulkanBackend() = default;

std::string VulkanBackend::description() const { return "vulkan: " + context_->device_name(); }

int64_t VulkanBackend::max_whole_tensor_elements() const {
  // A binding starts at the aligned offset at or below its tensor.
  const uint64_t limit = context_->max_binding_bytes(), alignment = context_->limits().min_storage_buffer_offset_alignment;
  return static_cast<int64_t>((limit > alignment ? limit - alignment : 0) / ops_library_->element_bytes());
}

CommandRecorder& VulkanBackend::record(const char* op) {
  if (current_ == nullptr) {
    throw Error(std::string("vulkan backend: ") + op + " called outside begin_program/end_program");
  }
  ++ops_;
  return current_->recorder;
}

DeviceTensor VulkanBackend::constant(const Tensor& value) {
  DeviceTensor x = tensor_on(*constants_, value.shape());
  upload(x, value);
  return x;
}

DeviceTensor VulkanBackend::constant_rows(std::shared_ptr<const RowSource> rows) {
  Tensor table(rows->shape());
  const int64_t row_size = table.numel() / table.dim(0);
  for (int64_t y = 0; y < table.dim(0); ++y) rows->row(y, table.data() + y * row_size);
  return constant(table);
}

LinearHandle VulkanBackend::linear(const Tensor& weight, const Tensor& bias, Precision precision) {
  refuse_bf16(precision == Precision::bf16, "linear");
  auto layer = std::make_shared<const DeviceLinear>(upload_linear(*context_, weight, bias, this->precision()));
  return {layer, layer->in_features, layer->out_features, precision};
}

DeviceTensor VulkanBackend::persistent(Shape shape) { return tensor_on(*constants_, std::move(shape)); }

DeviceTensor VulkanBackend::tensor(Shape shape, ElementType type) {
  refuse_bf16(type == ElementType::bf16, "tensor");
  return tensor_on(*activations_, std::move(shape));
}

DeviceTensor VulkanBackend::input(const Tensor& value) {
  DeviceTensor x = tensor(value.shape());
  write(x, value);
  return x;
}

void VulkanBackend::write(const DeviceTensor& x, const Tensor& value) {
  upload(x, value);
  ++uploads_;
}

void VulkanBackend::upload(const DeviceTensor& x, const Tensor& value) {
  const ArenaRange& range = range_of(x, "write");
  if (value.numel() != x.numel()) {
    throw Error("vulkan backend: cannot write " + shape_to_string(value.shape()) + " into " +
                shape_to_string(x.shape()));
  }
  upload_elements(*range.buffer, precision(), value.data(), static_cast<uint64_t>(value.numel()), range.offset);
}

Tensor VulkanBackend::download(const DeviceTensor& x) {
  const ArenaRange& range = range_of(x, "download");
  Tensor host(x.shape());
  download_elements(*range.buffer, precision(), host.data(), static_cast<uint64_t>(host.numel()), range.offset);
  ++downloads_;
  return host;
}

DeviceTensor VulkanBackend::conv2d_to_hwc(const DeviceTensor& image, const DeviceTensor& weight,
                                          const DeviceTensor& bias, int64_t stride, int64_t padding) {
  if (image.rank() != 4 || image.dim(0) != 1 || weight.rank() != 4 || weight.dim(1) != image.dim(1) ||
      weight.dim(2) != weight.dim(3) || bias.shape() != Shape{weight.dim(0)} || stride < 1) {
    throw Error("vulkan backend: conv2d_to_hwc: image " + shape_to_string(image.shape()) + ", weight " +
                shape_to_string(weight.shape()) + " and bias " + shape_to_string(bias.shape()) + " do not match");
  }
  const int64_t kernel = weight.dim(2);
  const int64_t out_height = (image.dim(2) + 2 * padding - kernel) / stride + 1;
  const int64_t out_width = (image.dim(3) + 2 * padding - kernel) / stride + 1;
  DeviceTensor y = tensor({out_height, out_width, weight.dim(0)});
  ops_library_->conv2d_to_hwc(record("conv2d_to_hwc"), elements(image, "conv2d_to_hwc"), image.dim(1), image.dim(2),
                              image.dim(3), elements(weight, "conv2d_to_hwc"), elements(bias, "conv2d_to_hwc"),
                              weight.dim(0), kernel, stride, padding, elements(y, "conv2d_to_hwc"));
  return y;
}

void VulkanBackend::add_rows(DeviceTensor& x, const DeviceTensor& rows) {
  if (x.shape() != rows.shape()) {
    throw Error("vulkan backend: add_rows: map " + shape_to_string(x.shape()) + " is not " +
                shape_to_string(rows.shape()));
  }
  ops_library_->add_periodic(record("add_rows"), elements(x, "add_rows"), elements(rows, "add_rows"), x.numel(),
                             x.numel(), elements(x, "add_rows"));
}

void VulkanBackend::layer_norm_rows(const DeviceTensor& x, const DeviceTensor& weight, const DeviceTensor& bias,
                                    float eps, DeviceTensor& y) {
  refuse_bf16(y.type() == ElementType::bf16, "layer_norm_rows");
  const int64_t channels = x.dim(-1);
  if (y.numel() != x.numel()) throw Error("vulkan backend: layer_norm_rows output size does not match its input");
  ops_library_->layer_norm_rows(record("layer_norm_rows"), elements(x, "layer_norm_rows"), x.numel() / channels,
                                channels, elements(weight, "layer_norm_rows"), elements(bias, "layer_norm_rows"), eps,
                                elements(y, "layer_norm_rows"));
}

void VulkanBackend::convert(const DeviceTensor&, DeviceTensor&) { refuse_bf16(true, "convert"); }

void VulkanBackend::linear_forward(const LinearHandle& layer, const DeviceTensor& x, int64_t rows, DeviceTensor& y,
                                   Epilogue epilogue) {
  const auto& device_layer = *static_cast<const DeviceLinear*>(layer.impl.get());
  ops_library_->linear(record("linear"), device_layer, elements(x, "linear"), rows, elements(y, "linear"), epilogue);
}

void VulkanBackend::mlp_forward(const LinearHandle& expand, const LinearHandle& contract, const DeviceTensor& x,
                                int64_t rows, DeviceTensor& y) {
  // One op of the model, as on the CPU: both layers go into one recording.
  DeviceTensor hidden = tensor({rows, expand.out_features});
  CommandRecorder& recorder = record("mlp");
  ops_library_->linear(recorder, *static_cast<const DeviceLinear*>(expand.impl.get()), elements(x, "mlp"), rows,
                       elements(hidden, "mlp"), Epilogue::gelu);
  ops_library_->linear(recorder, *static_cast<const DeviceLinear*>(contract.impl.get()), elements(hidden, "mlp"),
                       rows, elements(y, "mlp"), Epilogue::accumulate);
}

void VulkanBackend::windowed_attention(const DeviceTensor& qkv, int64_t window, const DeviceTensor& pad_token,
                                       int64_t heads, bool q_pool, DeviceTensor& out, bool bf16_products) {
  refuse_bf16(bf16_products, "windowed_attention");
  if (qkv.rank() != 3 || qkv.dim(2) % 3 != 0) {
    throw Error("vulkan backend: windowed_attention: qkv " + shape_to_string(qkv.shape()) + " is not [H, W, 3C]");
  }
  ops_library_->windowed_attention(record("windowed_attention"), elements(qkv, "windowed_attention"), qkv.dim(0),
                                   qkv.dim(1), qkv.dim(2) / 3, window, elements(pad_token, "windowed_attention"), heads,
                                   q_pool, elements(out, "windowed_attention"));
}

void VulkanBackend::qkv_windowed_attention(const LinearHandle& qkv, const DeviceTensor& x, int64_t height,
                                           int64_t width, int64_t window, const DeviceTensor& pad_token,
                                           int64_t heads, bool q_pool, DeviceTensor& out, bool bf16_products) {
  refuse_bf16(bf16_products, "qkv_windowed_attention");
  // One op of the model, as on the CPU: the qkv Linear and the attention go into
  // one recording, through a whole qkv grid (scratch of the arena).
  DeviceTensor grid = tensor({height, width, qkv.out_features});
  CommandRecorder& recorder = record("qkv_windowed_attention");
  ops_library_->linear(recorder, *static_cast<const DeviceLinear*>(qkv.impl.get()),
                       elements(x, "qkv_windowed_attention"), height * width,
                       elements(grid, "qkv_windowed_attention"), Epilogue::none);
  ops_library_->windowed_attention(recorder, elements(grid, "qkv_windowed_attention"), height, width,
                                   qkv.out_features / 3, window, elements(pad_token, "qkv_windowed_attention"),
                                   heads, q_pool, elements(out, "qkv_windowed_attention"));
}

namespace {

// attention()'s shapes and strides, without the operands' storage.
DeviceAttention attention_shapes(const AttentionOperands& a) {
  DeviceAttention args;
  args.nq = a.nq;
  args.nk = a.nk;
  args.heads = a.heads;
  args.head_dim = a.head_dim;
  args.value_dim = a.value_dim;
  return args;
}

}  // namespace

bool VulkanBackend::supports_attention(const AttentionOperands& shapes) const {
  // Values as wide as the keys run on every path; narrower ones on the scores path only.
  const DeviceAttention args = attention_shapes(shapes);
  return args.values() == args.head_dim || ops_library_->scores_rows(args) > 0;
}

void VulkanBackend::attention(const AttentionOperands& a) {
  refuse_bf16(a.bf16_products, "attention");
  DeviceAttention args = attention_shapes(a);
  args.q = elements_from(a.q, a.q_offset, "attention");
  args.k = elements_from(a.k, a.k_offset, "attention");
  args.v = elements_from(a.v, a.v_offset, "attention");
  args.out = elements(a.out, "attention");
  args.ldq = a.ldq;
  args.ldk = a.ldk;
  args.ldv = a.ldv;
  args.ldo = a.ldo;
  args.scale = a.scale;
  args.batches = a.batches;
  args.q_batch = a.q_batch_stride;
  args.k_batch = a.k_batch_stride;
  args.v_batch = a.v_batch_stride;
  args.o_batch = a.o_batch_stride;
  DeviceTensor scores;  // freed at return: a later op may take its range (every dispatch ends in a barrier)
  if (const int64_t rows = ops_library_->scores_rows(args); rows > 0) {
    scores = tensor({rows, a.nk});
    args.scores = elements(scores, "attention");
  }
  ops_library_->attention(record("attention"), args);
}

void VulkanBackend::max_pool2x2(const DeviceTensor& x, int64_t channel_offset, int64_t channels, DeviceTensor& y) {
  if (x.rank() < 3) throw Error("vulkan backend: max_pool2x2: map " + shape_to_string(x.shape()) + " is not [.., H, W, C]");
  const int64_t height = x.dim(-3), width = x.dim(-2), total = x.dim(-1);
  const int64_t n = x.numel() / (height * width * total);
  if (y.numel() != n * (height / 2) * (width / 2) * channels) {
    throw Error("vulkan backend: max_pool2x2: output " + shape_to_string(y.shape()) + " does not match");
  }
  ops_library_->max_pool2x2(record("max_pool2x2"), elements(x, "max_pool2x2"), n, height, width, total, channel_offset,
                            channels, elements(y, "max_pool2x2"));
}

void VulkanBackend::add_upsampled_nearest2x(DeviceTensor& x, const DeviceTensor& coarse) {
  if (coarse.rank() != 3 || x.shape() != Shape{2 * coarse.dim(0), 2 * coarse.dim(1), coarse.dim(2)}) {
    throw Error("vulkan backend: add_upsampled_nearest2x: " + shape_to_string(x.shape()) + " is not twice " +
                shape_to_string(coarse.shape()));
  }
  ops_library_->add_upsampled_nearest2x(record("add_upsampled_nearest2x"), elements(x, "add_upsampled_nearest2x"),
                                        elements(coarse, "add_upsampled_nearest2x"), coarse.dim(0), coarse.dim(1),
                                        coarse.dim(2));
}

void VulkanBackend::add_channel_vector(DeviceTensor& x, const DeviceTensor& vector) {
  if (vector.numel() != x.dim(-1)) {
    throw Error("vulkan backend: add_channel_vector: " + shape_to_string(vector.shape()) + " does not match " +
                shape_to_string(x.shape()));
  }
  ops_library_->add_periodic(record("add_channel_vector"), elements(x, "add_channel_vector"),
                             elements(vector, "add_channel_vector"), vector.numel(), x.numel(),
                             elements(x, "add_channel_vector"));
}

void VulkanBackend::copy(const DeviceTensor& x, DeviceTensor& y) {
  if (x.numel() != y.numel()) throw Error("vulkan backend: copy between tensors of different sizes");
  ops_library_->add_periodic(record("copy"), elements(x, "copy"), DeviceElements{}, 0, x.numel(), elements(y, "copy"));
}

void VulkanBackend::hwc_to_nchw(const DeviceTensor& x, DeviceTensor& y) {
  if (x.rank() != 3 || y.shape() != Shape{1, x.dim(2), x.dim(0), x.dim(1)}) {
    throw Error("vulkan backend: hwc_to_nchw: " + shape_to_string(x.shape()) + " -> " + shape_to_string(y.shape()));
  }
  ops_library_->hwc_to_nchw(record("hwc_to_nchw"), elements(x, "hwc_to_nchw"), x.dim(0), x.dim(1), x.dim(2),
                            elements(y, "hwc_to_nchw"));
}

void VulkanBackend::matmul_transposed(const DeviceTensor& x, const DeviceTensor& w, DeviceTensor& y,
                                      int64_t batches) {
  const int64_t k = w.dim(-1), n = batches > 0 ? w.numel() / k / batches : 0,
                rows = batches > 0 ? x.numel() / k / batches : 0;
  if (batches < 1 || x.numel() != batches * rows * k || w.numel() != batches * n * k ||
      y.numel() != batches * rows * n) {
    throw Error("vulkan backend: matmul_transposed: " + shape_to_string(x.shape()) + " x " +
                shape_to_string(w.shape()) + "^T -> " + shape_to_string(y.shape()) + " do not match in " +
                std::to_string(batches) + " batches");
  }
  // One GEMM dispatch over the batches, each block of w its own "weight".
  ops_library_->matmul(record("matmul_transposed"), elements(x, "matmul_transposed"), rows,
                       elements(w, "matmul_transposed"), DeviceElements{}, k, n, elements(y, "matmul_transposed"),
                       Epilogue::none, batches);
}

void VulkanBackend::conv_transpose2x2(const DeviceTensor& x, const DeviceTensor& weight, const DeviceTensor& bias,
                                      const DeviceTensor& add, DeviceTensor& y) {
  if (x.rank() != 3 || weight.rank() != 4 || weight.dim(0) != x.dim(2) || weight.dim(2) != 2 || weight.dim(3) != 2 ||
      y.shape() != Shape{2 * x.dim(0), 2 * x.dim(1), weight.dim(1)} ||
      (!add.empty() && y.numel() % add.numel() != 0)) {
    throw Error("vulkan backend: conv_transpose2x2: x " + shape_to_string(x.shape()) + ", weight " +
                shape_to_string(weight.shape()) + " and y " + shape_to_string(y.shape()) + " do not match");
  }
  ops_library_->conv_transpose2x2(record("conv_transpose2x2"), elements(x, "conv_transpose2x2"), x.dim(0), x.dim(1),
                                  x.dim(2), elements(weight, "conv_transpose2x2"), elements(bias, "conv_transpose2x2"),
                                  weight.dim(1), add.empty() ? DeviceElements{} : elements(add, "conv_transpose2x2"),
                                  elements(y, "conv_transpose2x2"), add.empty() ? 0 : add.numel());
}

void VulkanBackend::add(const DeviceTensor& a, const DeviceTensor& b, DeviceTensor& y) {
  if (b.numel() < 1 || a.numel() % b.numel() != 0 || y.numel() != a.numel()) {
    throw Error("vulkan backend: add of " + shape_to_string(a.shape()) + " and " + shape_to_string(b.shape()) +
                ": the first is not whole copies of the second");
  }
  ops_library_->add_periodic(record("add"), elements(a, "add"), elements(b, "add"), b.numel(), a.numel(),
                             elements(y, "add"));
}

void VulkanBackend::gelu(DeviceTensor& x) {
  ops_library_->activation(record("gelu"), elements(x, "gelu"), x.numel(), VulkanOps::Activation::gelu);
}

void VulkanBackend::sigmoid(DeviceTensor& x) {
  ops_library_->activation(record("sigmoid"), elements(x, "sigmoid"), x.numel(), VulkanOps::Activation::sigmoid);
}

void VulkanBackend::copy_elements(const DeviceTensor& x, int64_t x_offset, DeviceTensor& y, int64_t y_offset,
                                  int64_t count) {
  if (count < 1 || x_offset + count > x.numel() || y_offset + count > y.numel()) {
    throw Error("vulkan backend: copy_elements outside its tensors");
  }
  ops_library_->add_periodic(record("copy_elements"), elements_from(x, x_offset, "copy_elements"), DeviceElements{},
                             0, count, elements_from(y, y_offset, "copy_elements"));
}

void VulkanBackend::copy_rows(const DeviceTensor& x, int64_t x_offset, int64_t x_stride, DeviceTensor& y,
                              int64_t y_offset, int64_t y_stride, int64_t width, int64_t rows) {
  auto inside = [&](const DeviceTensor& t, int64_t offset, int64_t stride) {
    return offset >= 0 && stride >= 0 && (rows - 1) * stride + offset + width <= t.numel();
  };
  if (width < 1 || rows < 1 || !inside(x, x_offset, x_stride) || !inside(y, y_offset, y_stride)) {
    throw Error("vulkan backend: copy_rows outside its tensors");
  }
  ops_library_->copy_rows(record("copy_rows"), elements_from(x, x_offset, "copy_rows"), x_stride,
                          elements_from(y, y_offset, "copy_rows"), y_stride, width, rows);
}

void VulkanBackend::rotary_rows(DeviceTensor& x, int64_t rows, const DeviceTensor& table) {
  const int64_t width = x.dim(-1);
  if (table.rank() != 3 || table.dim(2) != 2 || table.dim(1) < 1 || width % (2 * table.dim(1)) != 0 || rows < 0 ||
      rows * width > x.numel()) {
    throw Error("vulkan backend: rotary_rows: " + std::to_string(rows) + " rows of " + shape_to_string(x.shape()) +
                " do not take the table " + shape_to_string(table.shape()));
  }
  if (rows == 0) return;
  ops_library_->rotary_rows(record("rotary_rows"), elements(x, "rotary_rows"), rows, width,
                            elements(table, "rotary_rows"), table.dim(0), table.dim(1));
}

void VulkanBackend::depthwise_conv2d_hwc(const DeviceTensor& x, const DeviceTensor& weight, const DeviceTensor& bias,
                                         int64_t padding, DeviceTensor& y) {
  const int64_t kernel = weight.rank() == 4 ? weight.dim(3) : 0;
  if (x.rank() != 3 || weight.rank() != 4 || weight.dim(0) != x.dim(2) || weight.dim(1) != 1 ||
      weight.dim(2) != kernel || bias.numel() != x.dim(2) || padding < 0 ||
      y.shape() != Shape{x.dim(0) + 2 * padding - kernel + 1, x.dim(1) + 2 * padding - kernel + 1, x.dim(2)} ||
      x.shares_storage_with(y)) {
    throw Error("vulkan backend: depthwise_conv2d_hwc: x " + shape_to_string(x.shape()) + ", weight " +
                shape_to_string(weight.shape()) + " and y " + shape_to_string(y.shape()) + " do not match");
  }
  ops_library_->depthwise_conv2d_hwc(record("depthwise_conv2d_hwc"), elements(x, "depthwise_conv2d_hwc"), x.dim(0),
                                     x.dim(1), x.dim(2), elements(weight, "depthwise_conv2d_hwc"),
                                     elements(bias, "depthwise_conv2d_hwc"), kernel, padding,
                                     elements(y, "depthwise_conv2d_hwc"));
}

void VulkanBackend::begin_program() {
  if (current_ != nullptr) throw Error("vulkan backend: a program is already being recorded");
  current_ = std::make_shared<VulkanProgram>(*context_);
  ops_at_begin_ = ops_;
}

std::shared_ptr<Program> VulkanBackend::end_program() {
  if (current_ == nullptr) throw Error("vulkan backend: end_program without begin_program");
  current_->ops = ops_ - ops_at_begin_;
  std::shared_ptr<Program> program = std::move(current_);
  current_.reset();
  return program;
}

void VulkanBackend::run(Program& program) {
  auto* recorded = dynamic_cast<VulkanProgram*>(&program);
  if (recorded == nullptr) throw Error("vulkan backend: the program was not recorded by this backend");
  recorded->recorder.submit();
  ++submissions_;
}

std::shared_ptr<Backend> make_vulkan_backend(int gpu_index, DevicePrecision precision) {
  VulkanContextOptions options;
  options.device_index = gpu_index;
  return std::make_shared<VulkanBackend>(options, precision);
}

}  // namespace sam2rt
