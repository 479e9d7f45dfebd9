#include "backends/cpu_backend.h"

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "kernels/attention.h"
#include "kernels/activation.h"
#include "kernels/bf16.h"
#include "kernels/conv_transpose.h"
#include "kernels/conv2d.h"
#include "kernels/depthwise_conv.h"
#include "kernels/gelu.h"
#include "kernels/decoder_rows.h"
#include "kernels/elementwise.h"
#include "kernels/gemm.h"
#include "kernels/interpolate.h"
#include "kernels/layout.h"
#include "kernels/matmul.h"
#include "kernels/norm.h"
#include "kernels/rotary.h"
#include "kernels/window.h"
#include "kernels/window_attention.h"

namespace sam2rt {

namespace {

// What a CPU DeviceTensor holds: float32 memory, bfloat16 memory, or (for a
// constant_rows) the table's source.
struct CpuStorage {
  Tensor f32;
  std::shared_ptr<void> bf16;
  std::shared_ptr<const RowSource> rows;
};

DeviceTensor wrap(Tensor value) {
  Shape shape = value.shape();
  auto storage = std::make_shared<CpuStorage>();
  storage->f32 = std::move(value);
  return DeviceTensor(std::move(shape), ElementType::f32, std::move(storage));
}

// DeviceTensor handles are shallow, like Tensor ones: a const handle may name
// memory an op writes.
CpuStorage& storage_of(const DeviceTensor& x) {
  if (x.empty()) throw Error("cpu backend: empty tensor");
  return *static_cast<CpuStorage*>(x.storage().get());
}

Tensor f32(const DeviceTensor& x) {
  const CpuStorage& storage = storage_of(x);
  if (x.type() != ElementType::f32 || storage.f32.empty()) {
    throw Error("cpu backend: expected a float32 tensor, got " + shape_to_string(x.shape()));
  }
  return storage.f32.reshaped(x.shape());
}

uint16_t* bf16(const DeviceTensor& x) {
  const CpuStorage& storage = storage_of(x);
  if (x.type() != ElementType::bf16 || storage.bf16 == nullptr) {
    throw Error("cpu backend: expected a bfloat16 tensor, got " + shape_to_string(x.shape()));
  }
  return static_cast<uint16_t*>(storage.bf16.get());
}

float* f32_data(const DeviceTensor& x) {
  f32(x);  // checks the type
  return storage_of(x).f32.data();
}

// The interface's operand types as PackedLinear's.
MatmulPrecision matmul_precision(Precision precision) {
  return precision == Precision::bf16 ? MatmulPrecision::bf16 : MatmulPrecision::fp32;
}

MatmulEpilogue matmul_epilogue(Epilogue epilogue) {
  switch (epilogue) {
    case Epilogue::none:
      return MatmulEpilogue::none;
    case Epilogue::gelu:
      return MatmulEpilogue::gelu;
    case Epilogue::accumulate:
      return MatmulEpilogue::accumulate;
    case Epilogue::relu:
      return MatmulEpilogue::relu;
  }
  throw Error("cpu backend: unknown Linear epilogue");
}

}  // namespace

CpuBackend::CpuBackend() = default;

DeviceTensor CpuBackend::constant(const Tensor& value) { return wrap(value); }

DeviceTensor CpuBackend::constant_rows(std::shared_ptr<const RowSource> rows) {
  Shape shape = rows->shape();
  auto storage = std::make_shared<CpuStorage>();
  storage->rows = std::move(rows);
  return DeviceTensor(std::move(shape), ElementType::f32, std::move(storage));
}

LinearHandle CpuBackend::linear(const Tensor& weight, const Tensor& bias, Precision precision) {
  auto packed = std::make_shared<const PackedLinear>(weight, bias, matmul_precision(precision));
  return {packed, packed->in_features(), packed->out_features(), precision};
}

DeviceTensor CpuBackend::persistent(Shape shape) { return wrap(Tensor::uninitialized(std::move(shape))); }

DeviceTensor CpuBackend::tensor(Shape shape, ElementType type) {
  if (type == ElementType::f32) return wrap(pool_.tensor(std::move(shape)));
  auto storage = std::make_shared<CpuStorage>();
  storage->bf16 = pool_.bytes(static_cast<size_t>(shape_numel(shape)) * sizeof(uint16_t));
  return DeviceTensor(std::move(shape), type, std::move(storage));
}

DeviceTensor CpuBackend::input(const Tensor& value) { return wrap(value); }

void CpuBackend::write(const DeviceTensor& x, const Tensor& value) {
  Tensor target = f32(x);
  if (value.shape() != target.shape()) {
    throw Error("cpu backend: cannot write " + shape_to_string(value.shape()) + " into " +
                shape_to_string(target.shape()));
  }
  std::copy(value.begin(), value.end(), target.begin());
}

Tensor CpuBackend::download(const DeviceTensor& x) { return f32(x); }

DeviceTensor CpuBackend::conv2d_to_hwc(const DeviceTensor& image, const DeviceTensor& weight,
                                       const DeviceTensor& bias, int64_t stride, int64_t padding) {
  ++ops_;
  return wrap(sam2rt::conv2d_to_hwc(f32(image), f32(weight), f32(bias), stride, padding, &pool_));
}

void CpuBackend::add_rows(DeviceTensor& x, const DeviceTensor& rows) {
  ++ops_;
  const RowSource* source = storage_of(rows).rows.get();
  if (source == nullptr) throw Error("cpu backend: add_rows needs a constant_rows table");
  if (x.shape() != source->shape()) {
    throw Error("cpu backend: add_rows: map " + shape_to_string(x.shape()) + " is not " +
                shape_to_string(source->shape()));
  }
  float* data = f32_data(x);
  const int64_t height = x.dim(0), row_size = x.dim(1) * x.dim(2);
#pragma omp parallel
  {
    std::vector<float> row(static_cast<size_t>(row_size));
#pragma omp for schedule(dynamic, 4)
    for (int64_t y = 0; y < height; ++y) {
      source->row(y, row.data());
      float* dst = data + y * row_size;
      for (int64_t i = 0; i < row_size; ++i) dst[i] += row[static_cast<size_t>(i)];
    }
  }
}

void CpuBackend::layer_norm_rows(const DeviceTensor& x, const DeviceTensor& weight, const DeviceTensor& bias,
                                 float eps, DeviceTensor& y) {
  ++ops_;
  const int64_t c = x.dim(-1), rows = x.numel() / c;
  if (y.numel() != x.numel()) throw Error("cpu backend: layer_norm_rows output size does not match its input");
  if (y.type() == ElementType::bf16) {
    sam2rt::layer_norm_rows(f32_data(x), c, rows, c, f32_data(weight), f32_data(bias), eps, bf16(y), c);
  } else {
    sam2rt::layer_norm_rows(f32_data(x), c, rows, c, f32_data(weight), f32_data(bias), eps, f32_data(y), c);
  }
}

void CpuBackend::convert(const DeviceTensor& x, DeviceTensor& y) {
  ++ops_;
  if (y.numel() != x.numel()) throw Error("cpu backend: convert output size does not match its input");
  convert_to_bf16(f32(x).data(), bf16(y), x.numel());
}

void CpuBackend::linear_forward(const LinearHandle& layer, const DeviceTensor& x, int64_t rows, DeviceTensor& y,
                                Epilogue epilogue) {
  ++ops_;
  const auto& packed = *static_cast<const PackedLinear*>(layer.impl.get());
  if (x.numel() < rows * layer.in_features || y.numel() < rows * layer.out_features) {
    throw Error("cpu backend: linear operands hold fewer than " + std::to_string(rows) + " rows");
  }
  const MatmulEpilogue kernel_epilogue = matmul_epilogue(epilogue);
  if (x.type() == ElementType::f32) {
    packed.forward(f32_data(x), rows, f32_data(y), kernel_epilogue);
  } else if (y.type() == ElementType::f32) {
    packed.forward(bf16(x), rows, f32_data(y), kernel_epilogue);
  } else {
    packed.forward(bf16(x), rows, bf16(y), kernel_epilogue);
  }
}

void CpuBackend::mlp_forward(const LinearHandle& expand, const LinearHandle& contract, const DeviceTensor& x,
                             int64_t rows, DeviceTensor& y) {
  ++ops_;
  if (x.numel() < rows * expand.in_features || y.numel() < rows * contract.out_features) {
    throw Error("cpu backend: mlp operands hold fewer than " + std::to_string(rows) + " rows");
  }
  if (y.type() != ElementType::f32) throw Error("cpu backend: mlp adds onto a float32 tensor");
  const void* input = x.type() == ElementType::f32 ? static_cast<const void*>(f32_data(x)) : bf16(x);
  sam2rt::mlp_forward(*static_cast<const PackedLinear*>(expand.impl.get()),
                      *static_cast<const PackedLinear*>(contract.impl.get()), input, rows, f32_data(y));
}

void CpuBackend::windowed_attention(const DeviceTensor& qkv, int64_t window, const DeviceTensor& pad_token,
                                    int64_t heads, bool q_pool, DeviceTensor& out, bool bf16_products) {
  ++ops_;
  Tensor result = f32(out);
  sam2rt::windowed_attention(f32(qkv), window, f32_data(pad_token), heads, q_pool, result, bf16_products);
}

void CpuBackend::qkv_windowed_attention(const LinearHandle& qkv, const DeviceTensor& x, int64_t height,
                                        int64_t width, int64_t window, const DeviceTensor& pad_token, int64_t heads,
                                        bool q_pool, DeviceTensor& out, bool bf16_products) {
  ++ops_;
  const auto& packed = *static_cast<const PackedLinear*>(qkv.impl.get());
  if (height < 1 || width < 1 || x.numel() < height * width * qkv.in_features) {
    throw Error("cpu backend: qkv_windowed_attention: x holds fewer than " + std::to_string(height) + " x " +
                std::to_string(width) + " tokens");
  }
  if ((x.type() == ElementType::bf16) != (packed.precision() == MatmulPrecision::bf16)) {
    throw Error("cpu backend: qkv_windowed_attention: a " +
                std::string(packed.precision() == MatmulPrecision::bf16 ? "bf16" : "fp32") + " layer given " +
                (x.type() == ElementType::bf16 ? "bfloat16" : "float32") + " tokens");
  }
  Tensor result = f32(out);
  const void* grid = x.type() == ElementType::f32 ? static_cast<const void*>(f32_data(x)) : bf16(x);
  if (windows_tile(height, width, window)) {
    sam2rt::qkv_windowed_attention_tiled(packed, grid, height, width, window, heads, q_pool, result, bf16_products);
    return;
  }
  // Windows that overhang the grid (padded with the pad token's qkv): one row of
  // windows at a time when the windows tile the rows (a partial last row of
  // windows would change the q-pooled output's rows), so each band's qkv is
  // produced, attended and overwritten while it is in cache. Every window's
  // attention and every token's qkv are computed as on the whole grid.
  const int64_t band = height % window == 0 ? window : height;
  const int64_t out_band = q_pool ? band / 2 : band;
  const int64_t out_width = q_pool ? width / 2 : width, channels = result.dim(2);
  const size_t x_row_bytes =
      static_cast<size_t>(qkv.in_features) * (x.type() == ElementType::f32 ? sizeof(float) : sizeof(uint16_t));
  const auto* x_bytes = static_cast<const char*>(grid);
  Tensor qkv_band = pool_.tensor({band, width, qkv.out_features});
  for (int64_t row = 0; row < height; row += band) {
    const void* band_x = x_bytes + static_cast<size_t>(row * width) * x_row_bytes;
    if (x.type() == ElementType::f32) {
      packed.forward(static_cast<const float*>(band_x), band * width, qkv_band.data(), MatmulEpilogue::none);
    } else {
      packed.forward(static_cast<const uint16_t*>(band_x), band * width, qkv_band.data(), MatmulEpilogue::none);
    }
    Tensor out_rows = band == height ? result
                                     : Tensor::view({out_band, out_width, channels},
                                                    result.data() + (q_pool ? row / 2 : row) * out_width * channels,
                                                    nullptr);
    sam2rt::windowed_attention(qkv_band, window, f32_data(pad_token), heads, q_pool, out_rows, bf16_products);
  }
}

void CpuBackend::attention(const AttentionOperands& operands) {
  ++ops_;
  if (operands.batches < 1) throw Error("cpu backend: attention needs at least one batch");
  for (int64_t i = 0; i < operands.batches; ++i) {
    AttentionArgs args;
    args.nq = operands.nq;
    args.nk = operands.nk;
    args.heads = operands.heads;
    args.head_dim = operands.head_dim;
    args.value_dim = operands.value_dim;
    args.q = f32_data(operands.q) + operands.q_offset + i * operands.q_batch_stride;
    args.ldq = operands.ldq;
    args.k = f32_data(operands.k) + operands.k_offset + i * operands.k_batch_stride;
    args.ldk = operands.ldk;
    args.v = f32_data(operands.v) + operands.v_offset + i * operands.v_batch_stride;
    args.ldv = operands.ldv;
    args.out = f32_data(operands.out) + i * operands.o_batch_stride;
    args.ldo = operands.ldo;
    args.scale = operands.scale;
    args.bf16_products = operands.bf16_products;
    sam2rt::attention(args);
  }
}

void CpuBackend::max_pool2x2(const DeviceTensor& x, int64_t channel_offset, int64_t channels, DeviceTensor& y) {
  ++ops_;
  Tensor result = f32(y);
  max_pool2x2_into(f32(x), channel_offset, channels, result);
}

void CpuBackend::add_upsampled_nearest2x(DeviceTensor& x, const DeviceTensor& coarse) {
  ++ops_;
  Tensor fine = f32(x);
  add_upsampled_nearest2x_inplace(fine, f32(coarse));
}

void CpuBackend::add_channel_vector(DeviceTensor& x, const DeviceTensor& vector) {
  ++ops_;
  Tensor map = f32(x);
  add_channel_vector_inplace(map, f32(vector));
}

void CpuBackend::copy(const DeviceTensor& x, DeviceTensor& y) {
  ++ops_;
  const Tensor source = f32(x);
  Tensor target = f32(y);
  if (source.numel() != target.numel()) throw Error("cpu backend: copy between tensors of different sizes");
  std::copy(source.begin(), source.end(), target.begin());
}

void CpuBackend::hwc_to_nchw(const DeviceTensor& x, DeviceTensor& y) {
  ++ops_;
  Tensor nchw = f32(y);
  hwc_to_nchw_into(f32(x), nchw);
}

void CpuBackend::matmul_transposed(const DeviceTensor& x, const DeviceTensor& w, DeviceTensor& y,
                                   int64_t batches) {
  ++ops_;
  const int64_t k = w.dim(-1), n = batches > 0 ? w.numel() / k / batches : 0,
                rows = batches > 0 ? x.numel() / k / batches : 0;
  if (batches < 1 || x.numel() != batches * rows * k || w.numel() != batches * n * k ||
      y.numel() != batches * rows * n) {
    throw Error("cpu backend: matmul_transposed: " + shape_to_string(x.shape()) + " x " +
                shape_to_string(w.shape()) + "^T -> " + shape_to_string(y.shape()) + " do not match in " +
                std::to_string(batches) + " batches");
  }
  for (int64_t i = 0; i < batches; ++i) {
    gemm({.m = rows, .n = n, .k = k, .a = f32_data(x) + i * rows * k, .lda = k, .b = f32_data(w) + i * n * k,
          .ldb = k, .b_transposed = true, .c = f32_data(y) + i * rows * n, .ldc = n});
  }
}

void CpuBackend::conv_transpose2x2(const DeviceTensor& x, const DeviceTensor& weight, const DeviceTensor& bias,
                                   const DeviceTensor& add, DeviceTensor& y) {
  ++ops_;
  const int64_t maps = add.empty() ? 1 : y.numel() / std::max<int64_t>(add.numel(), 1);
  if (x.rank() != 3 || weight.rank() != 4 || weight.dim(0) != x.dim(2) || weight.dim(2) != 2 || weight.dim(3) != 2 ||
      y.shape() != Shape{2 * x.dim(0), 2 * x.dim(1), weight.dim(1)} ||
      (!add.empty() && (maps < 1 || maps * add.numel() != y.numel() || x.dim(0) % maps != 0))) {
    throw Error("cpu backend: conv_transpose2x2: x " + shape_to_string(x.shape()) + ", weight " +
                shape_to_string(weight.shape()) + " and y " + shape_to_string(y.shape()) + " do not match");
  }
  const Tensor taps = pack_conv_transpose_2x2_taps(f32(weight));
  // Each stacked map with the addend (a transposed conv reads only its own input pixel).
  const int64_t height = x.dim(0) / maps, x_map = height * x.dim(1) * x.dim(2), y_map = y.numel() / maps;
  std::vector<float> scratch(static_cast<size_t>(height * x.dim(1) * taps.dim(1)));
  for (int64_t i = 0; i < maps; ++i) {
    conv_transpose_2x2_stride2_hwc(f32_data(x) + i * x_map, height, x.dim(1), x.dim(2), taps, f32(bias),
                                   f32_data(y) + i * y_map, scratch.data(), add.empty() ? nullptr : f32_data(add));
  }
}

void CpuBackend::add(const DeviceTensor& a, const DeviceTensor& b, DeviceTensor& y) {
  ++ops_;
  if (b.numel() < 1 || a.numel() % b.numel() != 0 || y.numel() != a.numel()) {
    throw Error("cpu backend: add of " + shape_to_string(a.shape()) + " and " + shape_to_string(b.shape()) +
                ": the first is not whole copies of the second");
  }
  for (int64_t first = 0; first < a.numel(); first += b.numel()) {
    sam2rt::add_rows(f32_data(a) + first, f32_data(b), b.numel(), f32_data(y) + first);
  }
}

void CpuBackend::gelu(DeviceTensor& x) {
  ++ops_;
  gelu_exact_inplace(f32_data(x), x.numel());
}

void CpuBackend::sigmoid(DeviceTensor& x) {
  ++ops_;
  Tensor values = f32(x);
  sigmoid_inplace(values);
}

void CpuBackend::copy_elements(const DeviceTensor& x, int64_t x_offset, DeviceTensor& y, int64_t y_offset,
                               int64_t count) {
  ++ops_;
  if (x_offset < 0 || y_offset < 0 || count < 0 || x_offset + count > x.numel() || y_offset + count > y.numel()) {
    throw Error("cpu backend: copy_elements outside its tensors");
  }
  std::copy_n(f32_data(x) + x_offset, count, f32_data(y) + y_offset);
}

void CpuBackend::copy_rows(const DeviceTensor& x, int64_t x_offset, int64_t x_stride, DeviceTensor& y,
                           int64_t y_offset, int64_t y_stride, int64_t width, int64_t rows) {
  ++ops_;
  auto inside = [&](const DeviceTensor& t, int64_t offset, int64_t stride) {
    return offset >= 0 && stride >= 0 && (rows - 1) * stride + offset + width <= t.numel();
  };
  if (width < 1 || rows < 1 || !inside(x, x_offset, x_stride) || !inside(y, y_offset, y_stride)) {
    throw Error("cpu backend: copy_rows outside its tensors");
  }
  for (int64_t r = 0; r < rows; ++r) {
    std::copy_n(f32_data(x) + x_offset + r * x_stride, width, f32_data(y) + y_offset + r * y_stride);
  }
}

void CpuBackend::rotary_rows(DeviceTensor& x, int64_t rows, const DeviceTensor& table) {
  ++ops_;
  const int64_t width = x.dim(-1);
  if (table.rank() != 3 || table.dim(2) != 2 || table.dim(1) < 1 || width % (2 * table.dim(1)) != 0 || rows < 0 ||
      rows * width > x.numel()) {
    throw Error("cpu backend: rotary_rows: " + std::to_string(rows) + " rows of " + shape_to_string(x.shape()) +
                " do not take the table " + shape_to_string(table.shape()));
  }
  rotate_pairs_rows(f32_data(x), rows, width, f32_data(table), table.dim(0), table.dim(1));
}

void CpuBackend::depthwise_conv2d_hwc(const DeviceTensor& x, const DeviceTensor& weight, const DeviceTensor& bias,
                                      int64_t padding, DeviceTensor& y) {
  ++ops_;
  const int64_t kernel = weight.rank() == 4 ? weight.dim(3) : 0;
  if (x.rank() != 3 || weight.rank() != 4 || weight.dim(0) != x.dim(2) || weight.dim(1) != 1 ||
      weight.dim(2) != kernel || bias.numel() != x.dim(2) || padding < 0 ||
      y.shape() != Shape{x.dim(0) + 2 * padding - kernel + 1, x.dim(1) + 2 * padding - kernel + 1, x.dim(2)} ||
      x.shares_storage_with(y)) {
    throw Error("cpu backend: depthwise_conv2d_hwc: x " + shape_to_string(x.shape()) + ", weight " +
                shape_to_string(weight.shape()) + " and y " + shape_to_string(y.shape()) + " do not match");
  }
  sam2rt::depthwise_conv2d_hwc(f32_data(x), x.dim(0), x.dim(1), x.dim(2), f32_data(weight), kernel, f32_data(bias),
                               padding, f32_data(y));
}

void CpuBackend::begin_program() { throw Error("cpu backend: runs each op when called, it records no program"); }

std::shared_ptr<Program> CpuBackend::end_program() {
  throw Error("cpu backend: runs each op when called, it records no program");
}

void CpuBackend::run(Program&) { throw Error("cpu backend: runs each op when called, it records no program"); }

}  // namespace sam2rt
