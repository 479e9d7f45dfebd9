#include "backends/vulkan/vulkan_ops.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "backends/vulkan/embedded_spirv.h"
#include "core/error.h"
#include "io/half.h"
#include "io/half_narrowing.h"

namespace sam2rt {

namespace {

// Must match the shaders' workgroup sizes.
// Rows and outputs per workgroup: matmul.comp and matmul_tiled.comp 64 x 64;
// matmul_16xN.comp 256 x 16N; conv_transpose2x2_to_hwc.comp (pixels, columns)
// 256 x 128, as matmul_16x8's.
constexpr uint32_t kMatmulTile = 64;
constexpr uint32_t kTallRows = 256;
constexpr uint32_t kConvTransposeColumns = 128;
constexpr uint32_t kConvTile = 128;  // conv2d_to_hwc.comp: output pixels and channels per workgroup
constexpr uint32_t kRowGroup = 64;
constexpr int64_t kMaxHeadDim = 128;  // attention.comp, attention_narrow.comp, windowed_attention.comp
// llvmpipe (lavapipe) silently ends a shader's loops after this many iterations
// per invocation (docs/BACKENDS.md).
constexpr int64_t kMaxLoopIterations = 65535;

struct MatmulPush {
  uint32_t rows, in_features, out_features, x_base, ldx, w_base, b_base, y_base, ldy, epilogue, has_bias, ldw, w_step,
      x_batch, w_batch, y_batch;
};
struct LayerNormPush {
  uint32_t rows, channels, x_base, ldx, weight_base, bias_base, y_base, ldy;
  float eps;
};
struct SoftmaxPush {
  uint32_t rows, cols, base, ld;
  float scale;
};
struct AttentionPush {
  uint32_t nq, nk, heads, head_dim, q_base, ldq, k_base, ldk, v_base, ldv, o_base, ldo;
  float scale;
  uint32_t q_batch, k_batch, v_batch, o_batch;
};
struct WindowedAttentionPush {
  uint32_t height, width, channels, heads, window, q_pool, window_cols, out_height, out_width, qkv_base, pad_base,
      o_base;
  float scale;
};
struct MaxPoolPush {
  uint32_t count, height, width, total_channels, channel_offset, channels, out_height, out_width, x_base, y_base;
};
struct UpsampleAddPush {
  uint32_t count, coarse_width, channels, x_base, coarse_base;
};
struct HwcToNchwPush {
  uint32_t count, pixels, channels, x_base, y_base;
};
struct ConvPush {
  uint32_t count, in_channels, height, width, out_channels, kernel, stride, padding, out_width, x_base, w_base, b_base,
      y_base;
};
struct AddPeriodicPush {
  uint32_t count, period, has_addend, x_base, addend_base, y_base;
};
struct ConvTransposePush {
  uint32_t count, width, in_channels, out_channels, has_add, x_base, w_base, b_base, add_base, y_base, add_count;
};
struct CopyRowsPush {
  uint32_t count, width, x_base, x_stride, y_base, y_stride;
};
struct ActivationPush {
  uint32_t count, kind, x_base;
};
struct RotaryPush {
  uint32_t count, row_pairs, pairs, period, x_base, table_base;
};
struct DepthwiseConvPush {
  uint32_t count, height, width, channels, kernel, padding, out_width, x_base, w_base, b_base, y_base;
};

// The shader `name` compiled for the storage of `precision` (shaders/storage.glsl).
template <class Push>
ComputePipeline pipeline(const VulkanContext& context, DevicePrecision precision, const char* name,
                         uint32_t bindings) {
  const std::string variant = precision == DevicePrecision::fp16 ? std::string(name) + "_f16" : std::string(name);
  return ComputePipeline(context, variant.c_str(), embedded_spirv(variant), bindings, sizeof(Push));
}

DevicePrecision supported(const VulkanContext& context, DevicePrecision precision) {
  if (precision == DevicePrecision::fp16 && !context.limits().storage_buffer_16bit) {
    throw Error("--precision fp16: " + context.device_name() +
                " cannot store 16-bit values in storage buffers (no storageBuffer16BitAccess); use --precision fp32");
  }
  return precision;
}

uint32_t groups_for(int64_t count, uint32_t per_group) {
  return static_cast<uint32_t>((count + per_group - 1) / per_group);
}

uint32_t u32(int64_t value, const std::string& what) {
  if (value < 0 || value > static_cast<int64_t>(UINT32_MAX)) throw Error(what + " " + std::to_string(value) + " out of range");
  return static_cast<uint32_t>(value);
}

}  // namespace

void upload_elements(DeviceBuffer& buffer, DevicePrecision precision, const float* values, uint64_t count,
                     uint64_t element_offset) {
  if (precision == DevicePrecision::fp32) {
    buffer.upload(values, count * sizeof(float), element_offset * sizeof(float));
    return;
  }
  std::vector<uint16_t> halves(count);
  for (uint64_t i = 0; i < count; ++i) halves[i] = float_to_f16(values[i]);
  buffer.upload(halves.data(), count * sizeof(uint16_t), element_offset * sizeof(uint16_t));
}

void download_elements(const DeviceBuffer& buffer, DevicePrecision precision, float* values, uint64_t count,
                       uint64_t element_offset) {
  if (precision == DevicePrecision::fp32) {
    buffer.download(values, count * sizeof(float), element_offset * sizeof(float));
    return;
  }
  std::vector<uint16_t> halves(count);
  buffer.download(halves.data(), count * sizeof(uint16_t), element_offset * sizeof(uint16_t));
  for (uint64_t i = 0; i < count; ++i) values[i] = f16_to_float(halves[i]);
}

DeviceLinear upload_linear(const VulkanContext& context, const Tensor& weight, const Tensor& bias,
                           DevicePrecision precision) {
  if (weight.rank() != 2 || weight.numel() == 0) {
    throw Error("Vulkan linear: weight must be a non-empty [out, in] matrix, got " + shape_to_string(weight.shape()));
  }
  if (!bias.empty() && bias.shape() != Shape{weight.dim(0)}) {
    throw Error("Vulkan linear: bias " + shape_to_string(bias.shape()) + " does not match weight " +
                shape_to_string(weight.shape()));
  }
  DeviceLinear layer;
  layer.out_features = weight.dim(0);
  layer.in_features = weight.dim(1);
  const uint64_t bytes = element_bytes(precision);
  layer.weight = DeviceBuffer(context, static_cast<uint64_t>(weight.numel()) * bytes);
  upload_elements(layer.weight, precision, weight.data(), static_cast<uint64_t>(weight.numel()), 0);
  layer.has_bias = !bias.empty();
  if (layer.has_bias) {
    layer.bias = DeviceBuffer(context, static_cast<uint64_t>(bias.numel()) * bytes);
    upload_elements(layer.bias, precision, bias.data(), static_cast<uint64_t>(bias.numel()), 0);
  }
  return layer;
}

VulkanOps::VulkanOps(const VulkanContext& context, DevicePrecision precision)
    : context_(context),
      precision_(supported(context, precision)),
      tiled_(context.tiled_kernels()),
      matmul_(pipeline<MatmulPush>(context, precision_, "matmul", 4)),
      matmul_16x1_(pipeline<MatmulPush>(context, precision_, "matmul_16x1", 4)),
      matmul_16x2_(pipeline<MatmulPush>(context, precision_, "matmul_16x2", 4)),
      matmul_16x4_(pipeline<MatmulPush>(context, precision_, "matmul_16x4", 4)),
      matmul_16x8_(pipeline<MatmulPush>(context, precision_, "matmul_16x8", 4)),
      matmul_tiled_(pipeline<MatmulPush>(context, precision_, "matmul_tiled", 4)),
      layer_norm_rows_(pipeline<LayerNormPush>(context, precision_, "layer_norm_rows", 4)),
      softmax_rows_(pipeline<SoftmaxPush>(context, precision_, "softmax_rows", 1)),
      attention_(pipeline<AttentionPush>(context, precision_, "attention", 4)),
      attention_tiled_(pipeline<AttentionPush>(context, precision_, "attention_tiled", 4)),
      attention_narrow_(pipeline<AttentionPush>(context, precision_, "attention_narrow", 4)),
      windowed_attention_(pipeline<WindowedAttentionPush>(context, precision_, "windowed_attention", 3)),
      max_pool2x2_(pipeline<MaxPoolPush>(context, precision_, "max_pool2x2", 2)),
      add_upsampled_nearest2x_(pipeline<UpsampleAddPush>(context, precision_, "add_upsampled_nearest2x", 2)),
      hwc_to_nchw_(pipeline<HwcToNchwPush>(context, precision_, "hwc_to_nchw", 2)),
      conv2d_to_hwc_(pipeline<ConvPush>(context, precision_, "conv2d_to_hwc", 4)),
      add_periodic_(pipeline<AddPeriodicPush>(context, precision_, "add_periodic", 3)),
      conv_transpose2x2_to_hwc_(pipeline<ConvTransposePush>(context, precision_, "conv_transpose2x2_to_hwc", 5)),
      activation_(pipeline<ActivationPush>(context, precision_, "activation", 1)),
      copy_rows_(pipeline<CopyRowsPush>(context, precision_, "copy_rows", 2)),
      rotary_rows_(pipeline<RotaryPush>(context, precision_, "rotary_rows", 2)),
      depthwise_conv2d_hwc_(pipeline<DepthwiseConvPush>(context, precision_, "depthwise_conv2d_hwc", 4)) {}

// The range starts at the aligned byte offset at or below the elements; `base`
// is where they start inside it, in elements (a push constant of the kernel).
struct VulkanOps::Bound {
  BufferRange range;
  uint32_t base = 0;
};

VulkanOps::Bound VulkanOps::bind(const DeviceElements& operand, uint64_t first, uint64_t count, const std::string& op,
                                 const char* name) const {
  const std::string what = op + ": operand '" + name + "' ";
  const uint64_t bytes = element_bytes();
  if (operand.buffer == nullptr) throw Error(what + "has no buffer");
  if (operand.offset + operand.count > operand.buffer->bytes() / bytes) {
    throw Error(what + "lies outside its buffer");
  }
  if (count == 0 || first + count > operand.count) {
    throw Error(what + "holds " + std::to_string(operand.count) + " elements, the kernel needs " +
                std::to_string(first + count));
  }
  const uint64_t alignment = context_.limits().min_storage_buffer_offset_alignment;
  const uint64_t byte = (operand.offset + first) * bytes;
  const uint64_t start = byte / alignment * alignment;
  return {{operand.buffer, start, byte + count * bytes - start}, static_cast<uint32_t>((byte - start) / bytes)};
}

template <class Push>
void VulkanOps::dispatch_elements(CommandRecorder& recorder, const ComputePipeline& pipeline,
                                  std::initializer_list<BufferRange> bindings, const Push& push, int64_t count) const {
  const uint32_t groups = groups_for(count, kRowGroup);
  const uint32_t columns = std::min(groups, context_.limits().max_workgroup_count[0]);
  recorder.dispatch(pipeline, bindings, push, {columns, (groups + columns - 1) / columns, 1});
}

void VulkanOps::linear(CommandRecorder& recorder, const DeviceLinear& layer, DeviceElements x, int64_t rows,
                       DeviceElements y, Epilogue epilogue) const {
  const uint64_t bytes = element_bytes();
  matmul(recorder, x, rows, all_elements(layer.weight, bytes),
         layer.has_bias ? all_elements(layer.bias, bytes) : DeviceElements{}, layer.in_features, layer.out_features, y,
         epilogue);
}

void VulkanOps::matmul(CommandRecorder& recorder, DeviceElements x, int64_t rows, DeviceElements weight,
                       DeviceElements bias, int64_t in, int64_t out, DeviceElements y, Epilogue epilogue,
                       int64_t batches) const {
  gemm(recorder,
       {.x = x, .weight = weight, .bias = bias, .y = y, .rows = rows, .in = in, .out = out, .ldx = in, .ldw = in,
        .ldy = out, .epilogue = epilogue, .batches = batches, .x_batch = rows * in, .w_batch = out * in,
        .y_batch = rows * out},
       "Vulkan linear");
}

void VulkanOps::gemm(CommandRecorder& recorder, const Gemm& g, const std::string& op) const {
  if (g.rows < 1) throw Error(op + ": no rows");
  if (g.in < 1 || g.out < 1) throw Error(op + ": empty weight");
  if (g.batches < 1 || g.x_batch < 0 || g.w_batch < 0 || g.y_batch < 0) {
    throw Error(op + ": needs at least one batch and batch strides of 0 or more");
  }
  if (static_cast<uint64_t>(g.batches) > context_.limits().max_workgroup_count[2]) {
    throw Error(op + ": " + std::to_string(g.batches) + " batches exceed the device's workgroup count");
  }
  const uint64_t limit = context_.max_binding_bytes(), alignment = context_.limits().min_storage_buffer_offset_alignment;
  const uint64_t usable = limit > alignment ? limit - alignment : 0;
  // A band of n rows spans less than n * max(ldx, ldy) elements of x and of y,
  // after the first batch's band: (batches - 1) batch strides.
  const int64_t widest = std::max(g.ldx, g.ldy);
  const uint64_t widest_row = static_cast<uint64_t>(widest) * element_bytes();
  const uint64_t later_batches =
      static_cast<uint64_t>((g.batches - 1) * std::max(g.x_batch, g.y_batch)) * element_bytes();
  const int64_t band = std::min<int64_t>(
      {g.rows, usable > later_batches ? static_cast<int64_t>((usable - later_batches) / widest_row) : 0,
       static_cast<int64_t>(kMatmulTile) * context_.limits().max_workgroup_count[1]});
  if (band < 1) {
    throw Error(op + ": a row of " + std::to_string(widest) + " elements in " + std::to_string(g.batches) +
                " batch(es) exceeds the " + std::to_string(limit) + " bytes one binding may span on " +
                context_.device_name());
  }
  // Elements of `rows` rows of stride ld and `width` values in every batch.
  auto span = [&g](int64_t rows, int64_t ld, int64_t width, int64_t batch) {
    return static_cast<uint64_t>((g.batches - 1) * batch + (rows - 1) * ld + width);
  };
  const bool has_bias = g.bias.buffer != nullptr;
  const Bound weight_b = bind(g.weight, 0, span(g.out, g.ldw, (g.in - 1) * g.w_step + 1, g.w_batch), op, "weight");
  const Bound bias_b = has_bias ? bind(g.bias, 0, static_cast<uint64_t>(g.out), op, "bias") : weight_b;  // bound but not read
  // Every band's operands are checked before the first one is recorded.
  bind(g.x, 0, span(g.rows, g.ldx, g.in, g.x_batch), op, "x");
  bind(g.y, 0, span(g.rows, g.ldy, g.out, g.y_batch), op, "y");
  // On CPU devices, products of the image's rows take blocks of 16 rows by N
  // outputs, N the smallest of 1, 2, 4, 8 whose 16N outputs cover `out` (at
  // most 128): 16x8 twice as fast as 4x4 on the Tiny encoder's wide layers,
  // and also for the 96 outputs of its attention heads (a quarter of the tile
  // unused, still 2.4x faster there); narrow layers waste no lanes on
  // outputs past the end. A prompt's few tokens take the 4x4 blocks, which
  // waste less on few rows.
  const ComputePipeline* kernel = tiled_ ? &matmul_tiled_ : &matmul_;
  uint32_t rows_per_group = kMatmulTile, outputs_per_group = kMatmulTile;
  if (!tiled_ && g.rows >= kTallRows) {
    const std::pair<uint32_t, const ComputePipeline*> tall[] = {
        {16, &matmul_16x1_}, {32, &matmul_16x2_}, {64, &matmul_16x4_}, {128, &matmul_16x8_}};
    // The first whose outputs cover `out`; wider layers take 16x8 tile by tile.
    const auto fits = std::find_if(std::begin(tall), std::end(tall) - 1,
                                   [&g](const auto& t) { return g.out <= static_cast<int64_t>(t.first); });
    rows_per_group = kTallRows;
    std::tie(outputs_per_group, kernel) = *fits;
  }
  for (int64_t r0 = 0; r0 < g.rows; r0 += band) {
    const int64_t n = std::min(band, g.rows - r0);
    const Bound xb = bind(g.x, static_cast<uint64_t>(r0 * g.ldx), span(n, g.ldx, g.in, g.x_batch), op, "x");
    const Bound yb = bind(g.y, static_cast<uint64_t>(r0 * g.ldy), span(n, g.ldy, g.out, g.y_batch), op, "y");
    const MatmulPush push{u32(n, op + ": rows"),          u32(g.in, op + ": in"),     u32(g.out, op + ": out"),
                          xb.base,                         u32(g.ldx, op + ": ldx"),   weight_b.base,
                          bias_b.base,                     yb.base,                    u32(g.ldy, op + ": ldy"),
                          static_cast<uint32_t>(g.epilogue), has_bias ? 1u : 0u,       u32(g.ldw, op + ": ldw"),
                          u32(g.w_step, op + ": w_step"),  u32(g.x_batch, op + ": x batch stride"),
                          u32(g.w_batch, op + ": weight batch stride"), u32(g.y_batch, op + ": y batch stride")};
    recorder.dispatch(*kernel, {xb.range, weight_b.range, bias_b.range, yb.range}, push,
                      {groups_for(g.out, outputs_per_group), groups_for(n, rows_per_group),
                       static_cast<uint32_t>(g.batches)});
  }
}

void VulkanOps::layer_norm_rows(CommandRecorder& recorder, DeviceElements x, int64_t rows, int64_t channels,
                                DeviceElements weight, DeviceElements bias, float eps, DeviceElements y) const {
  const std::string op = "Vulkan layer_norm_rows";
  if (rows < 1 || channels < 1) throw Error(op + ": empty input");
  const uint64_t n = static_cast<uint64_t>(rows * channels), c = static_cast<uint64_t>(channels);
  const Bound xb = bind(x, 0, n, op, "x"), yb = bind(y, 0, n, op, "y");
  const Bound wb = bind(weight, 0, c, op, "weight"), bb = bind(bias, 0, c, op, "bias");
  const LayerNormPush push{u32(rows, op + ": rows"), u32(channels, op + ": channels"), xb.base,
                           static_cast<uint32_t>(channels), wb.base, bb.base, yb.base,
                           static_cast<uint32_t>(channels), eps};
  recorder.dispatch(layer_norm_rows_, {xb.range, wb.range, bb.range, yb.range}, push,
                    {groups_for(rows, kRowGroup), 1, 1});
}

void VulkanOps::softmax_rows(CommandRecorder& recorder, DeviceElements x, int64_t rows, int64_t cols,
                             float scale) const {
  const std::string op = "Vulkan softmax_rows";
  if (rows < 1 || cols < 1) throw Error(op + ": empty input");
  if (cols > kMaxSoftmaxColumns) {
    throw Error(op + ": " + std::to_string(cols) + " columns exceed the kernel's " +
                std::to_string(kMaxSoftmaxColumns));
  }
  const Bound xb = bind(x, 0, static_cast<uint64_t>(rows * cols), op, "x");
  const SoftmaxPush push{u32(rows, op + ": rows"), u32(cols, op + ": cols"), xb.base, static_cast<uint32_t>(cols), scale};
  recorder.dispatch(softmax_rows_, {xb.range}, push, {groups_for(rows, kRowGroup), 1, 1});
}

void VulkanOps::attention(CommandRecorder& recorder, const DeviceAttention& a) const {
  const std::string op = "Vulkan attention";
  const int64_t width = a.heads * a.head_dim, value_width = a.heads * a.values();
  if (a.nq < 1 || a.nk < 1 || a.heads < 1 || a.head_dim < 1 || a.value_dim < 0 || a.value_dim > a.head_dim) {
    throw Error(op + ": needs queries, keys, heads, a head dimension and values no wider than it");
  }
  const int64_t rows = scores_rows(a);
  // What only the scores path takes.
  const bool narrow_values = a.values() != a.head_dim;
  if (rows == 0 && (narrow_values || a.head_dim > kMaxHeadDim)) {
    const std::string what = narrow_values ? "values narrower than the keys"
                                           : "heads of " + std::to_string(a.head_dim) + " channels (over " +
                                                 std::to_string(kMaxHeadDim) + ")";
    throw Error(op + ": " + what + " need fp32 storage, a multiple of 4 channels and at most " +
                std::to_string(kMaxLoopIterations) + " keys");
  }
  // Head dimensions that are not a multiple of 4 take the scalar kernel, whose
  // loops must stay within llvmpipe's 65535 iterations per invocation.
  const bool narrow = a.head_dim % 4 != 0;
  if (narrow && a.nk * (2 + 3 * a.head_dim) > kMaxLoopIterations) {
    throw Error(op + ": " + std::to_string(a.nk) + " keys of head dimension " + std::to_string(a.head_dim) +
                " (not a multiple of 4) exceed the scalar kernel's loop limit");
  }
  if (a.ldq < width || a.ldk < width || a.ldv < value_width || a.ldo < value_width) {
    throw Error(op + ": a row stride is below heads * head_dim = " + std::to_string(width) +
                " (values and output: heads * value width = " + std::to_string(value_width) + ")");
  }
  if (a.batches < 1 || a.q_batch < 0 || a.k_batch < 0 || a.v_batch < 0 || a.o_batch < 0) {
    throw Error(op + ": needs at least one batch and batch strides of 0 or more");
  }
  // Every batch's rows: (batches - 1) strides past the first batch's.
  auto span = [&](int64_t rows, int64_t ld, int64_t batch, int64_t row_width) {
    return static_cast<uint64_t>((a.batches - 1) * batch + (rows - 1) * ld + row_width);
  };
  const Bound q = bind(a.q, 0, span(a.nq, a.ldq, a.q_batch, width), op, "q");
  const Bound k = bind(a.k, 0, span(a.nk, a.ldk, a.k_batch, width), op, "k");
  const Bound v = bind(a.v, 0, span(a.nk, a.ldv, a.v_batch, value_width), op, "v");
  const Bound o = bind(a.out, 0, span(a.nq, a.ldo, a.o_batch, value_width), op, "out");
  if (rows > 0) {
    attention_through_scores(recorder, a, rows);
    return;
  }
  if (static_cast<uint64_t>(a.batches) > context_.limits().max_workgroup_count[2]) {
    throw Error(op + ": " + std::to_string(a.batches) + " batches exceed the device's workgroup count");
  }
  const AttentionPush push{u32(a.nq, op + ": nq"),      u32(a.nk, op + ": nk"),
                           u32(a.heads, op + ": heads"), static_cast<uint32_t>(a.head_dim),
                           q.base,                       u32(a.ldq, op + ": ldq"),
                           k.base,                       u32(a.ldk, op + ": ldk"),
                           v.base,                       u32(a.ldv, op + ": ldv"),
                           o.base,                       u32(a.ldo, op + ": ldo"),
                           a.scale,                      u32(a.q_batch, op + ": q batch stride"),
                           u32(a.k_batch, op + ": k batch stride"), u32(a.v_batch, op + ": v batch stride"),
                           u32(a.o_batch, op + ": out batch stride")};
  const ComputePipeline& kernel = narrow ? attention_narrow_ : tiled_ ? attention_tiled_ : attention_;
  recorder.dispatch(kernel, {q.range, k.range, v.range, o.range}, push,
                    {groups_for(a.nq, kRowGroup), static_cast<uint32_t>(a.heads), static_cast<uint32_t>(a.batches)});
}

int64_t VulkanOps::scores_rows(const DeviceAttention& a) const {
  // The values GEMM loops over the keys once per invocation.
  if (precision_ != DevicePrecision::fp32 || a.head_dim % 4 != 0 || a.nk > kMaxLoopIterations) return 0;
  const uint64_t row_bytes = static_cast<uint64_t>(a.nk) * element_bytes();
  const uint64_t binding = context_.max_binding_bytes() - context_.limits().min_storage_buffer_offset_alignment;
  const auto rows_that_fit = static_cast<int64_t>(binding / row_bytes);
  if (a.head_dim > kMaxHeadDim || a.values() != a.head_dim) return std::min(a.nq, rows_that_fit);
  const bool long_on_a_cpu_device = !tiled_ && a.nk >= kScoresFromKeys && a.nq >= kScoresFromQueries;
  return long_on_a_cpu_device && a.nq <= rows_that_fit ? a.nq : 0;
}

void VulkanOps::attention_through_scores(CommandRecorder& recorder, const DeviceAttention& a, int64_t rows) const {
  const std::string op = "Vulkan attention";
  if (a.scores.count < static_cast<uint64_t>(rows * a.nk)) {
    throw Error(op + ": the scores scratch holds " + std::to_string(a.scores.count) + " elements, " +
                std::to_string(rows * a.nk) + " needed");
  }
  auto column = [](DeviceElements operand, int64_t offset) {
    operand.offset += static_cast<uint64_t>(offset);
    operand.count -= std::min(operand.count, static_cast<uint64_t>(offset));
    return operand;
  };
  // Batch by batch, head by head, block of queries by block into the same
  // scratch (every dispatch ends in a barrier).
  for (int64_t b = 0; b < a.batches; ++b) {
    const DeviceElements k = column(a.k, b * a.k_batch), v = column(a.v, b * a.v_batch);
    for (int64_t h = 0; h < a.heads; ++h) {
      const int64_t first = h * a.head_dim, first_value = h * a.values();
      for (int64_t i0 = 0; i0 < a.nq; i0 += rows) {
        const int64_t n = std::min(rows, a.nq - i0);
        const DeviceElements q = column(a.q, b * a.q_batch + i0 * a.ldq),
                             out = column(a.out, b * a.o_batch + i0 * a.ldo);
        // scores[i, j] = q_i . k_j: the keys as the weight's rows.
        gemm(recorder,
             {.x = column(q, first), .weight = column(k, first), .y = a.scores, .rows = n, .in = a.head_dim,
              .out = a.nk, .ldx = a.ldq, .ldw = a.ldk, .ldy = a.nk},
             op + " (scores)");
        softmax_rows(recorder, a.scores, n, a.nk, a.scale);
        // out[i, d] = sum_j p[i, j] v[j, d]: the values, read transposed, as the weight.
        gemm(recorder,
             {.x = a.scores, .weight = column(v, first_value), .y = column(out, first_value), .rows = n,
              .in = a.nk, .out = a.values(), .ldx = a.nk, .ldw = 1, .w_step = a.ldv, .ldy = a.ldo},
             op + " (values)");
      }
    }
  }
}

void VulkanOps::windowed_attention(CommandRecorder& recorder, DeviceElements qkv, int64_t height, int64_t width,
                                   int64_t channels, int64_t window, DeviceElements pad_token, int64_t heads,
                                   bool q_pool, DeviceElements out) const {
  const std::string op = "Vulkan windowed_attention";
  if (height < 1 || width < 1 || window < 1 || heads < 1 || channels < 1 || channels % heads != 0 ||
      channels / heads > kMaxHeadDim || (q_pool && window % 2 != 0)) {
    throw Error(op + ": bad window " + std::to_string(window) + ", heads " + std::to_string(heads) + " or channels " +
                std::to_string(channels) + " (head dimension at most " + std::to_string(kMaxHeadDim) + ")");
  }
  const int64_t out_window = q_pool ? window / 2 : window;
  const int64_t out_height = q_pool ? height / 2 : height, out_width = q_pool ? width / 2 : width;
  const int64_t window_rows = (height + window - 1) / window, window_cols = (width + window - 1) / window;
  if ((out_height + out_window - 1) / out_window != window_rows ||
      (out_width + out_window - 1) / out_window != window_cols) {
    throw Error(op + ": the pooled grid does not keep the window grid");
  }
  bind(qkv, 0, static_cast<uint64_t>(height * width * 3 * channels), op, "qkv");
  bind(out, 0, static_cast<uint64_t>(out_height * out_width * channels), op, "out");
  const Bound pad_b = bind(pad_token, 0, static_cast<uint64_t>(3 * channels), op, "pad_token");
  // Bands of whole window rows whose bindings fit: no window crosses a band, and
  // only the last band ends in padding rows, as the whole grid does.
  const uint64_t limit = context_.max_binding_bytes(), alignment = context_.limits().min_storage_buffer_offset_alignment;
  const uint64_t usable = limit > alignment ? limit - alignment : 0;
  const uint64_t window_row_bytes = static_cast<uint64_t>(window * width * 3 * channels) * element_bytes();
  const int64_t band = std::min<int64_t>(window_rows, static_cast<int64_t>(usable / window_row_bytes));
  if (band < 1) {
    throw Error(op + ": one row of windows (" + std::to_string(window_row_bytes) + " bytes of qkv) exceeds the " +
                std::to_string(limit) + " bytes one binding may span on " + context_.device_name());
  }
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(channels / heads)));
  for (int64_t r0 = 0; r0 < window_rows; r0 += band) {
    const int64_t n = std::min(band, window_rows - r0);
    const int64_t y0 = r0 * window, rows = std::min(height, (r0 + n) * window) - y0;
    const int64_t oy0 = r0 * out_window, out_rows = std::min(out_height, (r0 + n) * out_window) - oy0;
    const Bound qkv_b = bind(qkv, static_cast<uint64_t>(y0 * width * 3 * channels),
                             static_cast<uint64_t>(rows * width * 3 * channels), op, "qkv");
    const Bound out_b = bind(out, static_cast<uint64_t>(oy0 * out_width * channels),
                             static_cast<uint64_t>(out_rows * out_width * channels), op, "out");
    const WindowedAttentionPush push{static_cast<uint32_t>(rows), u32(width, op + ": width"),
                                     u32(channels, op + ": channels"), static_cast<uint32_t>(heads),
                                     u32(window, op + ": window"), q_pool ? 1u : 0u,
                                     static_cast<uint32_t>(window_cols), static_cast<uint32_t>(out_rows),
                                     static_cast<uint32_t>(out_width), qkv_b.base, pad_b.base, out_b.base, scale};
    const int64_t invocations = n * window_cols * out_window * out_window;
    recorder.dispatch(windowed_attention_, {qkv_b.range, pad_b.range, out_b.range}, push,
                      {groups_for(invocations, kRowGroup), static_cast<uint32_t>(heads), 1});
  }
}

void VulkanOps::max_pool2x2(CommandRecorder& recorder, DeviceElements x, int64_t n, int64_t height, int64_t width,
                            int64_t total_channels, int64_t channel_offset, int64_t channels, DeviceElements y) const {
  const std::string op = "Vulkan max_pool2x2";
  if (n < 1 || height < 2 || width < 2 || channels < 1 || channel_offset < 0 ||
      channel_offset + channels > total_channels) {
    throw Error(op + ": bad shape or channel range");
  }
  const int64_t out_height = height / 2, out_width = width / 2, count = n * out_height * out_width * channels;
  const Bound xb = bind(x, 0, static_cast<uint64_t>(n * height * width * total_channels), op, "x");
  const Bound yb = bind(y, 0, static_cast<uint64_t>(count), op, "y");
  const MaxPoolPush push{u32(count, op + ": size"), u32(height, op + ": height"), u32(width, op + ": width"),
                         u32(total_channels, op + ": channels"), static_cast<uint32_t>(channel_offset),
                         static_cast<uint32_t>(channels), static_cast<uint32_t>(out_height),
                         static_cast<uint32_t>(out_width), xb.base, yb.base};
  dispatch_elements(recorder, max_pool2x2_, {xb.range, yb.range}, push, count);
}

void VulkanOps::add_upsampled_nearest2x(CommandRecorder& recorder, DeviceElements x, DeviceElements coarse,
                                        int64_t height, int64_t width, int64_t channels) const {
  const std::string op = "Vulkan add_upsampled_nearest2x";
  if (height < 1 || width < 1 || channels < 1) throw Error(op + ": empty map");
  const int64_t count = 4 * height * width * channels;
  const Bound xb = bind(x, 0, static_cast<uint64_t>(count), op, "x");
  const Bound cb = bind(coarse, 0, static_cast<uint64_t>(height * width * channels), op, "coarse");
  const UpsampleAddPush push{u32(count, op + ": size"), u32(width, op + ": width"), u32(channels, op + ": channels"),
                             xb.base, cb.base};
  dispatch_elements(recorder, add_upsampled_nearest2x_, {xb.range, cb.range}, push, count);
}

void VulkanOps::hwc_to_nchw(CommandRecorder& recorder, DeviceElements x, int64_t height, int64_t width,
                            int64_t channels, DeviceElements y) const {
  const std::string op = "Vulkan hwc_to_nchw";
  if (height < 1 || width < 1 || channels < 1) throw Error(op + ": empty map");
  const int64_t count = height * width * channels;
  const Bound xb = bind(x, 0, static_cast<uint64_t>(count), op, "x");
  const Bound yb = bind(y, 0, static_cast<uint64_t>(count), op, "y");
  const HwcToNchwPush push{u32(count, op + ": size"), u32(height * width, op + ": pixels"),
                           u32(channels, op + ": channels"), xb.base, yb.base};
  dispatch_elements(recorder, hwc_to_nchw_, {xb.range, yb.range}, push, count);
}

void VulkanOps::conv2d_to_hwc(CommandRecorder& recorder, DeviceElements x, int64_t in_channels, int64_t height,
                              int64_t width, DeviceElements weight, DeviceElements bias, int64_t out_channels,
                              int64_t kernel, int64_t stride, int64_t padding, DeviceElements y) const {
  const std::string op = "Vulkan conv2d_to_hwc";
  if (in_channels < 1 || height < 1 || width < 1 || out_channels < 1 || kernel < 1 || stride < 1 || padding < 0) {
    throw Error(op + ": bad shape");
  }
  const int64_t out_height = (height + 2 * padding - kernel) / stride + 1;
  const int64_t out_width = (width + 2 * padding - kernel) / stride + 1;
  if (out_height < 1 || out_width < 1) throw Error(op + ": the kernel is larger than the padded image");
  const int64_t count = out_height * out_width * out_channels;
  const Bound xb = bind(x, 0, static_cast<uint64_t>(in_channels * height * width), op, "x");
  const Bound wb =
      bind(weight, 0, static_cast<uint64_t>(out_channels * in_channels * kernel * kernel), op, "weight");
  const Bound bb = bind(bias, 0, static_cast<uint64_t>(out_channels), op, "bias");
  const Bound yb = bind(y, 0, static_cast<uint64_t>(count), op, "y");
  const ConvPush push{u32(count, op + ": size"),    u32(in_channels, op + ": channels"),
                      u32(height, op + ": height"), u32(width, op + ": width"),
                      u32(out_channels, op + ": out channels"), u32(kernel, op + ": kernel"),
                      u32(stride, op + ": stride"), u32(padding, op + ": padding"),
                      static_cast<uint32_t>(out_width), xb.base, wb.base, bb.base, yb.base};
  // Tiles of 128 output pixels by 128 channels.
  recorder.dispatch(conv2d_to_hwc_, {xb.range, wb.range, bb.range, yb.range}, push,
                    {groups_for(out_channels, kConvTile), groups_for(out_height * out_width, kConvTile), 1});
}

void VulkanOps::add_periodic(CommandRecorder& recorder, DeviceElements x, DeviceElements addend, int64_t period,
                             int64_t count, DeviceElements y) const {
  const std::string op = "Vulkan add_periodic";
  const bool has_addend = addend.buffer != nullptr;
  if (count < 1 || (has_addend && (period < 1 || count % period != 0))) {
    throw Error(op + ": " + std::to_string(count) + " values are not whole periods of " + std::to_string(period));
  }
  const Bound xb = bind(x, 0, static_cast<uint64_t>(count), op, "x");
  const Bound ab = has_addend ? bind(addend, 0, static_cast<uint64_t>(period), op, "addend") : xb;
  const Bound yb = bind(y, 0, static_cast<uint64_t>(count), op, "y");
  const AddPeriodicPush push{u32(count, op + ": size"), has_addend ? u32(period, op + ": period") : 1u,
                             has_addend ? 1u : 0u, xb.base, ab.base, yb.base};
  dispatch_elements(recorder, add_periodic_, {xb.range, ab.range, yb.range}, push, count);
}

void VulkanOps::conv_transpose2x2(CommandRecorder& recorder, DeviceElements x, int64_t height, int64_t width,
                                  int64_t in_channels, DeviceElements weight, DeviceElements bias,
                                  int64_t out_channels, DeviceElements add, DeviceElements y, int64_t add_count) const {
  const std::string op = "Vulkan conv_transpose2x2";
  if (height < 1 || width < 1 || in_channels < 1 || out_channels < 1) throw Error(op + ": bad shape");
  const int64_t count = 4 * height * width * out_channels;
  const int64_t addend = add_count == 0 ? count : add_count;
  // Whole output rows of whole maps stacked along the height.
  if (addend < 1 || count % addend != 0 || addend % (4 * width * out_channels) != 0) {
    throw Error(op + ": an addend of " + std::to_string(addend) + " values is not whole maps of the output");
  }
  const bool has_add = add.buffer != nullptr;
  const Bound xb = bind(x, 0, static_cast<uint64_t>(height * width * in_channels), op, "x");
  const Bound wb = bind(weight, 0, static_cast<uint64_t>(in_channels * out_channels * 4), op, "weight");
  const Bound bb = bind(bias, 0, static_cast<uint64_t>(out_channels), op, "bias");
  const Bound yb = bind(y, 0, static_cast<uint64_t>(count), op, "y");
  const Bound ab = has_add ? bind(add, 0, static_cast<uint64_t>(addend), op, "add") : xb;  // bound but not read
  const ConvTransposePush push{u32(count, op + ": size"),
                               u32(width, op + ": width"),
                               u32(in_channels, op + ": in channels"),
                               u32(out_channels, op + ": out channels"),
                               has_add ? 1u : 0u,
                               xb.base,
                               wb.base,
                               bb.base,
                               ab.base,
                               yb.base,
                               u32(addend, op + ": addend size")};
  // Tiles of 256 pixels by 128 columns (output channel, tap), as matmul_16x8's;
  // the pixels' tiles along y, then z.
  const uint32_t pixel_tiles = groups_for(height * width, kTallRows);
  const uint32_t along_y = std::min(pixel_tiles, context_.limits().max_workgroup_count[1]);
  recorder.dispatch(conv_transpose2x2_to_hwc_, {xb.range, wb.range, bb.range, ab.range, yb.range}, push,
                    {groups_for(4 * out_channels, kConvTransposeColumns), along_y,
                     (pixel_tiles + along_y - 1) / along_y});
}

void VulkanOps::activation(CommandRecorder& recorder, DeviceElements x, int64_t count, Activation kind) const {
  const std::string op = "Vulkan activation";
  if (count < 1) throw Error(op + ": no values");
  const Bound xb = bind(x, 0, static_cast<uint64_t>(count), op, "x");
  const ActivationPush push{u32(count, op + ": size"), static_cast<uint32_t>(kind), xb.base};
  dispatch_elements(recorder, activation_, {xb.range}, push, count);
}

void VulkanOps::copy_rows(CommandRecorder& recorder, DeviceElements x, int64_t x_stride, DeviceElements y,
                          int64_t y_stride, int64_t width, int64_t rows) const {
  const std::string op = "Vulkan copy_rows";
  if (width < 1 || rows < 1 || x_stride < 0 || y_stride < 0) throw Error(op + ": bad rows, width or strides");
  const Bound xb = bind(x, 0, static_cast<uint64_t>((rows - 1) * x_stride + width), op, "x");
  const Bound yb = bind(y, 0, static_cast<uint64_t>((rows - 1) * y_stride + width), op, "y");
  const int64_t count = rows * width;
  const CopyRowsPush push{u32(count, op + ": size"), u32(width, op + ": width"), xb.base,
                          u32(x_stride, op + ": x stride"), yb.base, u32(y_stride, op + ": y stride")};
  dispatch_elements(recorder, copy_rows_, {xb.range, yb.range}, push, count);
}

void VulkanOps::rotary_rows(CommandRecorder& recorder, DeviceElements x, int64_t rows, int64_t width,
                            DeviceElements table, int64_t period, int64_t pairs) const {
  const std::string op = "Vulkan rotary_rows";
  if (rows < 1 || pairs < 1 || period < 1 || width % (2 * pairs) != 0) {
    throw Error(op + ": " + std::to_string(rows) + " rows of " + std::to_string(width) + " values, " +
                std::to_string(pairs) + " pairs per head");
  }
  const int64_t count = rows * width / 2;
  const Bound xb = bind(x, 0, static_cast<uint64_t>(rows * width), op, "x");
  const Bound tb = bind(table, 0, static_cast<uint64_t>(period * pairs * 2), op, "table");
  const RotaryPush push{u32(count, op + ": pairs"), u32(width / 2, op + ": row pairs"), u32(pairs, op + ": pairs"),
                        u32(period, op + ": period"), xb.base, tb.base};
  dispatch_elements(recorder, rotary_rows_, {xb.range, tb.range}, push, count);
}

void VulkanOps::depthwise_conv2d_hwc(CommandRecorder& recorder, DeviceElements x, int64_t height, int64_t width,
                                     int64_t channels, DeviceElements weight, DeviceElements bias, int64_t kernel,
                                     int64_t padding, DeviceElements y) const {
  const std::string op = "Vulkan depthwise_conv2d_hwc";
  const int64_t out_height = height + 2 * padding - kernel + 1, out_width = width + 2 * padding - kernel + 1;
  if (channels < 1 || kernel < 1 || padding < 0 || out_height < 1 || out_width < 1) {
    throw Error(op + ": empty map or output");
  }
  const int64_t count = out_height * out_width * channels;
  const Bound xb = bind(x, 0, static_cast<uint64_t>(height * width * channels), op, "x");
  const Bound wb = bind(weight, 0, static_cast<uint64_t>(channels * kernel * kernel), op, "weight");
  const Bound bb = bind(bias, 0, static_cast<uint64_t>(channels), op, "bias");
  const Bound yb = bind(y, 0, static_cast<uint64_t>(count), op, "y");
  const DepthwiseConvPush push{u32(count, op + ": size"), u32(height, op + ": height"), u32(width, op + ": width"),
                               u32(channels, op + ": channels"), u32(kernel, op + ": kernel"),
                               u32(padding, op + ": padding"), u32(out_width, op + ": out width"),
                               xb.base, wb.base, bb.base, yb.base};
  dispatch_elements(recorder, depthwise_conv2d_hwc_, {xb.range, wb.range, bb.range, yb.range}, push, count);
}

}  // namespace sam2rt
