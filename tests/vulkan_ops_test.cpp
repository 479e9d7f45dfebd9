// The Vulkan ops (VulkanOps, below the Backend) where the Backend op table
// (backend_ops_test.cpp, which checks every op's numbers) cannot look: dispatch
// counts, rows split into bands under capped bindings, the tiled kernels GPUs
// get forced on this device, batched dispatches bit for bit against each batch
// alone, chained ops' barriers, refusals, and softmax_rows, which no Backend op
// exposes alone. With the validation layers on (lavapipe in CI). Tolerances, not
// bits, against the CPU: the device sums in another order and may or may not
// fuse multiply-adds.
#ifdef SAM2RT_VULKAN

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "backends/vulkan/command_recorder.h"
#include "backends/vulkan/vulkan_ops.h"
#include "core/error.h"
#include "kernels/attention.h"
#include "kernels/elementwise.h"
#include "kernels/gemm.h"
#include "kernels/matmul.h"
#include "kernels/norm.h"
#include "kernels/softmax.h"
#include "kernels/window_attention.h"
#include "random_tensor.h"
#include "vulkan_test_context.h"

namespace sam2rt::testing {
namespace {

class VulkanOpsTest : public VulkanTest {
 protected:
  void SetUp() override {
    VulkanTest::SetUp();
    make_ops();
  }
  void TearDown() override {
    ops_.reset();
    VulkanTest::TearDown();
  }
  void reopen(const VulkanContextOptions& options) {
    ops_.reset();
    open_context(options);
    make_ops();
  }
  const VulkanOps& ops() const { return *ops_; }

  // y = x W^T + b with each epilogue, on the device and by the CPU's PackedLinear.
  void check_linear(int64_t rows, int64_t in, int64_t out, bool with_bias, size_t expected_dispatches) {
    const Tensor x = random_tensor({rows, in}, 11);
    const Tensor weight = random_tensor({out, in}, 12, 0.3f);
    const Tensor bias = with_bias ? random_tensor({out}, 13) : Tensor();
    const Tensor residual = random_tensor({rows, out}, 14);
    const PackedLinear cpu(weight, bias, MatmulPrecision::fp32);
    const DeviceLinear layer = upload_linear(context(), weight, bias);
    const DeviceBuffer device_x = upload(x);
    const std::pair<Epilogue, MatmulEpilogue> epilogues[] = {{Epilogue::none, MatmulEpilogue::none},
                                                             {Epilogue::gelu, MatmulEpilogue::gelu},
                                                             {Epilogue::accumulate, MatmulEpilogue::accumulate},
                                                             {Epilogue::relu, MatmulEpilogue::relu}};
    for (const auto& [epilogue, kernel_epilogue] : epilogues) {
      Tensor expected = residual.clone();
      cpu.forward(x.data(), rows, expected.data(), kernel_epilogue);
      const DeviceBuffer device_y = upload(residual);
      CommandRecorder recorder(context());
      ops().linear(recorder, layer, all_elements(device_x), rows, all_elements(device_y), epilogue);
      EXPECT_EQ(recorder.dispatch_count(), expected_dispatches);
      recorder.submit();
      EXPECT_LE(scaled_max_error(download(device_y, {rows, out}), expected), 2e-6)
          << "epilogue " << static_cast<int>(epilogue) << ", bias " << with_bias;
    }
  }

  // softmax_rows of scale * x on the device against the CPU's, x [rows, cols].
  void expect_softmax_rows_like_the_cpu(int64_t rows, int64_t cols, uint32_t seed, float scale) {
    const Tensor x = random_tensor({rows, cols}, seed, 20.0f);
    Tensor expected = x.clone();
    for (float& v : expected) v *= scale;
    softmax_rows(expected.data(), rows, cols, cols);
    const DeviceBuffer dx = upload(x);
    CommandRecorder recorder(context());
    ops().softmax_rows(recorder, all_elements(dx), rows, cols, scale);
    recorder.submit();
    EXPECT_LE(scaled_max_error(download(dx, {rows, cols}), expected), 1e-6) << rows << " x " << cols;
  }

 private:
  void make_ops() { ops_ = std::make_unique<VulkanOps>(context()); }
  std::unique_ptr<VulkanOps> ops_;
};

TEST_F(VulkanOpsTest, LinearSplitsRowsToRespectTheBindingRange) {
  VulkanContextOptions capped;
  capped.max_binding_bytes = 4096;  // the weight (3840 bytes) still fits
  reopen(capped);
  // Widest row 40 floats (160 bytes): (4096 - alignment) / 160 rows per band.
  const uint64_t alignment = context().limits().min_storage_buffer_offset_alignment;
  const int64_t band = static_cast<int64_t>((4096 - alignment) / 160);
  const int64_t rows = 80;
  check_linear(rows, 40, 24, true, static_cast<size_t>((rows + band - 1) / band));

  // A row wider than a binding cannot be split by rows.
  const DeviceLinear wide = upload_linear(context(), random_tensor({1, 1100}, 1), Tensor());
  const DeviceBuffer x = zeros(1100), y = zeros(1);
  CommandRecorder recorder(context());
  EXPECT_THROW(ops().linear(recorder, wide, all_elements(x), 1, all_elements(y), Epilogue::none), Error);
}

// The tiled shared-memory kernel that GPUs get, forced on this device: tiles cut
// at rows, outputs and k that are not multiples of 64, 64 and 16, and bands.
TEST_F(VulkanOpsTest, TiledLinearMatchesPackedLinear) {
  EXPECT_EQ(context().tiled_kernels(), !context().limits().cpu_device);
  VulkanContextOptions tiled;
  tiled.force_tiled_kernels = true;
  reopen(tiled);
  ASSERT_TRUE(context().tiled_kernels());
  check_linear(37, 40, 24, true, 1);
  check_linear(130, 96, 70, false, 1);
  check_linear(65, 200, 129, true, 1);
  tiled.max_binding_bytes = 4096;
  reopen(tiled);
  const uint64_t alignment = context().limits().min_storage_buffer_offset_alignment;
  const int64_t band = static_cast<int64_t>((4096 - alignment) / 160);
  check_linear(80, 40, 24, true, static_cast<size_t>((80 + band - 1) / band));
}

TEST_F(VulkanOpsTest, SoftmaxRowsMatchesTheCpu) {
  expect_softmax_rows_like_the_cpu(33, 77, 31, 1.0f);
  // With a scale: the softmax of scale * x (attention's scores).
  expect_softmax_rows_like_the_cpu(33, 77, 31, 0.125f);
}

// Rows as long as the memory attention's (28 736 memory tokens): three passes
// over the row, more than llvmpipe's 65535 loop iterations per invocation if
// each iteration took one column.
TEST_F(VulkanOpsTest, SoftmaxRowsOfManyColumnsMatchesTheCpu) {
  expect_softmax_rows_like_the_cpu(3, 30001, 32, 1.0f);
  const DeviceBuffer dx = zeros(VulkanOps::kMaxSoftmaxColumns + 1);
  CommandRecorder recorder(context());
  EXPECT_THROW(ops().softmax_rows(recorder, all_elements(dx), 1, VulkanOps::kMaxSoftmaxColumns + 1), Error);
}

// Scores of a few units carry an absolute rounding of |s| 2^-23 into exp(), so
// attention outputs differ from the CPU's by a few 1e-6 (the device's exp and
// summation order differ too).
constexpr double kAttentionTolerance = 5e-6;

// Self-attention of the first nq of `tokens` tokens whose q, k and v are
// interleaved per token as in a qkv projection: [tokens, 3 * heads * head_dim].
struct InterleavedAttention {
  int64_t tokens, nq, heads, head_dim;
  int64_t width() const { return heads * head_dim; }
  float scale() const { return static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim))); }

  Tensor on_the_cpu(const Tensor& qkv) const {
    Tensor out({nq, width()});
    AttentionArgs args;
    args.nq = nq;
    args.nk = tokens;
    args.heads = heads;
    args.head_dim = head_dim;
    args.q = qkv.data();
    args.k = qkv.data() + width();
    args.v = qkv.data() + 2 * width();
    args.ldq = args.ldk = args.ldv = 3 * width();
    args.out = out.data();
    args.ldo = width();
    args.scale = scale();
    attention(args);
    return out;
  }

  DeviceAttention on_the_device(const DeviceBuffer& qkv, const DeviceBuffer& out) const {
    const DeviceElements all = all_elements(qkv);
    const uint64_t w = static_cast<uint64_t>(width());
    DeviceAttention device;
    device.nq = nq;
    device.nk = tokens;
    device.heads = heads;
    device.head_dim = head_dim;
    device.q = all;
    device.k = {&qkv, w, all.count - w};
    device.v = {&qkv, 2 * w, all.count - 2 * w};
    device.out = all_elements(out);
    device.ldq = device.ldk = device.ldv = 3 * width();
    device.ldo = width();
    device.scale = scale();
    return device;
  }
};

TEST_F(VulkanOpsTest, AttentionMatchesTheCpu) {
  // 3 heads of 96 and 300 keys (not a multiple of the tiled kernel's 32): more
  // than llvmpipe's 65535 loop iterations per invocation if the head dimension
  // were a loop inside the loop over the keys; 45 queries leave most of a
  // 64-query workgroup without a query.
  const InterleavedAttention shape{300, 45, 3, 96};
  const Tensor qkv = random_tensor({shape.tokens, 3 * shape.width()}, 41, 2.0f);
  const Tensor expected = shape.on_the_cpu(qkv);

  // The barrier-free kernel (CPU devices), then the tiled one GPUs get, forced.
  for (const bool tiled : {false, true}) {
    VulkanContextOptions options;
    options.force_tiled_kernels = tiled;
    reopen(options);
    ASSERT_EQ(context().tiled_kernels(), tiled || !context().limits().cpu_device);
    const DeviceBuffer dqkv = upload(qkv), dout = zeros(shape.nq * shape.width());
    DeviceAttention device = shape.on_the_device(dqkv, dout);
    CommandRecorder recorder(context());
    ops().attention(recorder, device);
    recorder.submit();
    EXPECT_LE(scaled_max_error(download(dout, {shape.nq, shape.width()}), expected), kAttentionTolerance)
        << "tiled " << tiled;

    device.head_dim = 129;
    EXPECT_THROW(ops().attention(recorder, device), Error);
    // A head dimension that is not a multiple of 4 takes the scalar kernel, within llvmpipe's loop limit only.
    device.head_dim = 30;
    device.nk = 1000;
    EXPECT_THROW(ops().attention(recorder, device), Error);
  }
}

// Long attention on a CPU device (lavapipe): per head the scores GEMM, the
// softmax and the values GEMM through a scratch, instead of the fused kernel.
// 1100 keys (not a multiple of the GEMM's 64-wide tiles), two heads of 40 (the
// second at a column offset in q, k, v and out), 70 queries.
TEST_F(VulkanOpsTest, LongAttentionOnACpuDeviceGoesThroughScoresAndMatchesTheCpu) {
  if (!context().limits().cpu_device) GTEST_SKIP() << "GPUs keep the fused kernel";
  const InterleavedAttention shape{1100, 70, 2, 40};
  ASSERT_GE(shape.tokens, VulkanOps::kScoresFromKeys);
  const Tensor qkv = random_tensor({shape.tokens, 3 * shape.width()}, 43, 2.0f);
  const Tensor expected = shape.on_the_cpu(qkv);
  const DeviceBuffer dqkv = upload(qkv), dout = zeros(shape.nq * shape.width());
  const DeviceBuffer dscores = zeros(shape.nq * shape.tokens);
  DeviceAttention device = shape.on_the_device(dqkv, dout);
  ASSERT_EQ(ops().scores_rows(device), shape.nq);
  CommandRecorder recorder(context());
  EXPECT_THROW(ops().attention(recorder, device), Error) << "no scratch for the scores";
  device.scores = all_elements(dscores);
  ops().attention(recorder, device);
  recorder.submit();
  EXPECT_LE(scaled_max_error(download(dout, {shape.nq, shape.width()}), expected), kAttentionTolerance);
  // One key fewer than kScoresFromKeys keeps the fused kernel, and so does one
  // query fewer than kScoresFromQueries.
  ASSERT_GE(shape.nq, VulkanOps::kScoresFromQueries);
  device.nq = VulkanOps::kScoresFromQueries - 1;
  EXPECT_EQ(ops().scores_rows(device), 0);
  device.nq = shape.nq;
  device.nk = VulkanOps::kScoresFromKeys - 1;
  EXPECT_EQ(ops().scores_rows(device), 0);
}

// Heads wider than the fused kernels' 128 channels (Tiny's memory attention:
// one of 256) go through the scores on every device, blocks of queries at a
// time where their scores would not fit one binding: here 600 queries against
// 40 keys under a binding capped at the keys' 40 x 256 floats, so blocks of
// 256 queries (the last one 88), on the CPU devices' kernels and on the tiled
// ones GPUs get. fp16 storage refuses such heads.
TEST_F(VulkanOpsTest, WideHeadsGoThroughScoresInBlocksOfQueries) {
  const int64_t nq = 600, nk = 40, head_dim = 256;
  const Tensor q = random_tensor({nq, head_dim}, 44, 0.5f), k = random_tensor({nk, head_dim}, 45, 0.5f),
               v = random_tensor({nk, head_dim}, 46);
  Tensor expected({nq, head_dim});
  AttentionArgs cpu;
  cpu.nq = nq;
  cpu.nk = nk;
  cpu.head_dim = head_dim;
  cpu.q = q.data();
  cpu.k = k.data();
  cpu.v = v.data();
  cpu.ldq = cpu.ldk = cpu.ldv = cpu.ldo = head_dim;
  cpu.out = expected.data();
  cpu.scale = 1.0f / 16.0f;
  attention(cpu);
  for (const bool tiled : {false, true}) {
    VulkanContextOptions options;
    options.force_tiled_kernels = tiled;
    reopen(options);
    options.max_binding_bytes = static_cast<uint64_t>(nk * head_dim) * sizeof(float) +
                                context().limits().min_storage_buffer_offset_alignment;
    reopen(options);
    const DeviceBuffer dq = upload(q), dk = upload(k), dv = upload(v), dout = zeros(nq * head_dim),
                       dscores = zeros(256 * nk);
    DeviceAttention device;
    device.nq = nq;
    device.nk = nk;
    device.head_dim = head_dim;
    device.q = all_elements(dq);
    device.k = all_elements(dk);
    device.v = all_elements(dv);
    device.out = all_elements(dout);
    device.ldq = device.ldk = device.ldv = device.ldo = head_dim;
    device.scale = cpu.scale;
    ASSERT_EQ(ops().scores_rows(device), 256) << "tiled " << tiled;
    CommandRecorder recorder(context());
    EXPECT_THROW(ops().attention(recorder, device), Error) << "no scratch for the scores";
    device.scores = all_elements(dscores);
    ops().attention(recorder, device);
    recorder.submit();
    EXPECT_LE(scaled_max_error(download(dout, {nq, head_dim}), expected), kAttentionTolerance) << "tiled " << tiled;

    const VulkanOps fp16(context(), DevicePrecision::fp16);
    EXPECT_EQ(fp16.scores_rows(device), 0);
    EXPECT_THROW(fp16.attention(recorder, device), Error);
  }
}

// A batch of attentions in one dispatch (the mask decoder's prompts: dispatch
// z) is each batch's attention alone, bit for bit: with per-batch queries
// against shared keys and values (tokens against one image), shared queries
// against per-batch ones (an image's queries against each prompt's tokens), on
// the scalar kernel (head dimension 2), the barrier-free and the tiled one
// (16), and on a CPU device through the scores (1100 keys).
TEST_F(VulkanOpsTest, BatchedAttentionIsEachBatchAloneBitForBit) {
  struct BatchCase {
    int64_t nq, nk, heads, head_dim;
    bool shared_q, shared_kv, tiled;
  };
  const int64_t batches = 3;
  const std::vector<BatchCase> cases = {
      {7, 64, 8, 2, false, true, false},  {64, 7, 8, 2, true, false, false},  {9, 70, 4, 16, false, true, false},
      {70, 9, 4, 16, true, false, false}, {9, 70, 4, 16, false, false, true}, {5, 1100, 2, 16, false, true, false}};
  for (const BatchCase& c : cases) {
    SCOPED_TRACE(std::to_string(c.nq) + " queries, " + std::to_string(c.nk) + " keys, head dimension " +
                 std::to_string(c.head_dim) + (c.tiled ? ", tiled" : ""));
    VulkanContextOptions options;
    options.force_tiled_kernels = c.tiled;
    reopen(options);
    const int64_t width = c.heads * c.head_dim;
    const int64_t q_batches = c.shared_q ? 1 : batches, kv_batches = c.shared_kv ? 1 : batches;
    const Tensor q = random_tensor({q_batches * c.nq, width}, 45, 2.0f);
    const Tensor k = random_tensor({kv_batches * c.nk, width}, 46, 2.0f);
    const Tensor v = random_tensor({kv_batches * c.nk, width}, 47);
    const DeviceBuffer dq = upload(q), dk = upload(k), dv = upload(v), dscores = zeros(c.nq * c.nk);
    auto attention_of = [&](int64_t first_batch, int64_t count, const DeviceBuffer& out) {
      auto from = [](const DeviceBuffer& buffer, int64_t offset) {
        DeviceElements e = all_elements(buffer);
        e.offset += static_cast<uint64_t>(offset);
        e.count -= static_cast<uint64_t>(offset);
        return e;
      };
      const int64_t q_stride = c.shared_q ? 0 : c.nq * width, kv_stride = c.shared_kv ? 0 : c.nk * width;
      DeviceAttention device;
      device.nq = c.nq;
      device.nk = c.nk;
      device.heads = c.heads;
      device.head_dim = c.head_dim;
      device.q = from(dq, first_batch * q_stride);
      device.k = from(dk, first_batch * kv_stride);
      device.v = from(dv, first_batch * kv_stride);
      device.out = from(out, first_batch * c.nq * width);
      device.ldq = device.ldk = device.ldv = device.ldo = width;
      device.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.head_dim)));
      device.scores = all_elements(dscores);
      device.batches = count;
      device.q_batch = q_stride;
      device.k_batch = device.v_batch = kv_stride;
      device.o_batch = c.nq * width;
      return device;
    };
    const DeviceBuffer together = zeros(batches * c.nq * width), alone = zeros(batches * c.nq * width);
    CommandRecorder recorder(context());
    ops().attention(recorder, attention_of(0, batches, together));
    for (int64_t b = 0; b < batches; ++b) ops().attention(recorder, attention_of(b, 1, alone));
    recorder.submit();
    const Tensor batched = download(together, {batches * c.nq, width}), each = download(alone, {batches * c.nq, width});
    EXPECT_EQ(std::memcmp(batched.data(), each.data(), sizeof(float) * static_cast<size_t>(each.numel())), 0);
    EXPECT_TRUE(std::any_of(each.begin(), each.end(), [](float value) { return value != 0.0f; }));
  }
}

struct WindowCase {
  int64_t height, width, window, heads;
  bool q_pool;
};

// Also with bindings capped so that larger qkv grids are split into bands of
// window rows (one row of 8x16 windows is 24576 bytes; 11x13 with windows of 8
// ends in a band of 3 rows and padding).
TEST_F(VulkanOpsTest, WindowedAttentionMatchesTheCpu) {
  const int64_t channels = 16;
  for (const uint64_t cap : {uint64_t{0}, uint64_t{28000}}) {
    VulkanContextOptions capped;
    capped.max_binding_bytes = cap;
    reopen(capped);
    for (const WindowCase& c : {WindowCase{16, 16, 8, 2, false}, WindowCase{12, 9, 4, 1, false},
                                WindowCase{11, 13, 8, 2, false}, WindowCase{16, 16, 4, 2, true},
                                WindowCase{10, 10, 4, 1, true}}) {
      const Tensor qkv = random_tensor({c.height, c.width, 3 * channels}, 51, 2.0f);
      const Tensor pad = random_tensor({3 * channels}, 52);
      const int64_t out_h = c.q_pool ? c.height / 2 : c.height, out_w = c.q_pool ? c.width / 2 : c.width;
      Tensor expected({out_h, out_w, channels});
      windowed_attention(qkv, c.window, pad.data(), c.heads, c.q_pool, expected);
      const DeviceBuffer dqkv = upload(qkv), dpad = upload(pad), dout = zeros(out_h * out_w * channels);
      CommandRecorder recorder(context());
      ops().windowed_attention(recorder, all_elements(dqkv), c.height, c.width, channels, c.window, all_elements(dpad),
                               c.heads, c.q_pool, all_elements(dout));
      recorder.submit();
      EXPECT_LE(scaled_max_error(download(dout, {out_h, out_w, channels}), expected), kAttentionTolerance)
          << c.height << "x" << c.width << " window " << c.window << " q_pool " << c.q_pool << " cap " << cap;
      const uint64_t qkv_bytes = static_cast<uint64_t>(qkv.numel()) * sizeof(float);
      if (cap > 0 && qkv_bytes > cap) {
        EXPECT_GT(recorder.dispatch_count(), 1u);
      }
    }
  }
}

TEST_F(VulkanOpsTest, AddPeriodicAddsChannelVectorsAndCopies) {
  const Tensor x = random_tensor({5, 3, 7}, 81), vector = random_tensor({7}, 82);
  Tensor expected = x.clone();
  add_channel_vector_inplace(expected, vector);
  const DeviceBuffer dx = upload(x), dv = upload(vector), copied = zeros(x.numel());
  CommandRecorder recorder(context());
  ops().add_periodic(recorder, all_elements(dx), {}, 0, x.numel(), all_elements(copied));
  ops().add_periodic(recorder, all_elements(dx), all_elements(dv), 7, x.numel(), all_elements(dx));
  recorder.submit();
  const Tensor sum = download(dx, x.shape()), copy = download(copied, x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) {
    ASSERT_EQ(copy[i], x[i]) << i;
    ASSERT_EQ(sum[i], expected[i]) << i;
  }
  EXPECT_THROW(ops().add_periodic(recorder, all_elements(dx), all_elements(dv), 6, x.numel(), all_elements(dx)), Error);
}

TEST_F(VulkanOpsTest, OneRecordingChainsOpsWithBarriers) {
  // LayerNorm -> Linear (+GELU) -> Linear (+residual) in one command buffer: the
  // block's MLP, each op reading what the previous wrote.
  const int64_t rows = 20, channels = 24, hidden = 96;
  const Tensor x = random_tensor({rows, channels}, 71);
  const Tensor norm_w = random_tensor({channels}, 72), norm_b = random_tensor({channels}, 73);
  const Tensor w1 = random_tensor({hidden, channels}, 74, 0.3f), b1 = random_tensor({hidden}, 75);
  const Tensor w2 = random_tensor({channels, hidden}, 76, 0.1f), b2 = random_tensor({channels}, 77);

  Tensor normed({rows, channels}), h({rows, hidden});
  Tensor expected = x.clone();
  layer_norm_rows(x.data(), channels, rows, channels, norm_w.data(), norm_b.data(), 1e-6f, normed.data(), channels);
  PackedLinear(w1, b1, MatmulPrecision::fp32).forward(normed.data(), rows, h.data(), MatmulEpilogue::gelu);
  PackedLinear(w2, b2, MatmulPrecision::fp32).forward(h.data(), rows, expected.data(), MatmulEpilogue::accumulate);

  const DeviceBuffer dx = upload(x), dnw = upload(norm_w), dnb = upload(norm_b);
  const DeviceBuffer dnormed = zeros(rows * channels), dh = zeros(rows * hidden);
  const DeviceLinear l1 = upload_linear(context(), w1, b1), l2 = upload_linear(context(), w2, b2);
  CommandRecorder recorder(context());
  ops().layer_norm_rows(recorder, all_elements(dx), rows, channels, all_elements(dnw), all_elements(dnb), 1e-6f,
                        all_elements(dnormed));
  ops().linear(recorder, l1, all_elements(dnormed), rows, all_elements(dh), Epilogue::gelu);
  ops().linear(recorder, l2, all_elements(dh), rows, all_elements(dx), Epilogue::accumulate);
  recorder.submit();
  EXPECT_LE(scaled_max_error(download(dx, {rows, channels}), expected), 4e-6);
}

// The hypernetwork products of a batch of prompts in one dispatch (its z
// groups), each prompt's outputs against its own map: each batch's product
// alone, bit for bit, and the CPU's within the GEMM tolerance; with this
// device's kernel and the tiled one, and with bindings capped so that every
// batch's rows are split into the same bands (70 rows, 3 bands).
TEST_F(VulkanOpsTest, BatchedMatmulIsEachBatchAloneBitForBit) {
  struct BatchCase {
    int64_t rows, k, n;
    uint64_t max_binding_bytes;
    bool tiled;
    size_t dispatches;
  };
  const int64_t batches = 3;
  for (const BatchCase& c : std::vector<BatchCase>{
           {4, 12, 300, 0, false, 1}, {4, 12, 300, 0, true, 1}, {70, 12, 9, 8192, false, 3}, {70, 12, 9, 8192, true, 3}}) {
    SCOPED_TRACE(std::to_string(c.rows) + " rows" + (c.tiled ? ", tiled" : "") +
                 (c.max_binding_bytes > 0 ? ", capped bindings" : ""));
    VulkanContextOptions options;
    options.force_tiled_kernels = c.tiled;
    options.max_binding_bytes = c.max_binding_bytes;
    reopen(options);
    const Tensor x = random_tensor({batches * c.rows, c.k}, 103), w = random_tensor({batches * c.n, c.k}, 104);
    Tensor expected({batches * c.rows, c.n});
    for (int64_t b = 0; b < batches; ++b) {
      gemm({.m = c.rows, .n = c.n, .k = c.k, .a = x.data() + b * c.rows * c.k, .lda = c.k,
            .b = w.data() + b * c.n * c.k, .ldb = c.k, .b_transposed = true, .c = expected.data() + b * c.rows * c.n,
            .ldc = c.n});
    }
    const DeviceBuffer dx = upload(x), dw = upload(w), together = zeros(expected.numel()),
                       alone = zeros(expected.numel());
    CommandRecorder recorder(context());
    ops().matmul(recorder, all_elements(dx), c.rows, all_elements(dw), {}, c.k, c.n, all_elements(together),
                 Epilogue::none, batches);
    EXPECT_EQ(recorder.dispatch_count(), c.dispatches);
    for (int64_t b = 0; b < batches; ++b) {
      auto block = [b](const DeviceBuffer& buffer, int64_t size) {
        return DeviceElements{&buffer, static_cast<uint64_t>(b * size), static_cast<uint64_t>(size)};
      };
      ops().matmul(recorder, block(dx, c.rows * c.k), c.rows, block(dw, c.n * c.k), {}, c.k, c.n,
                   block(alone, c.rows * c.n), Epilogue::none);
    }
    recorder.submit();
    const Tensor batched = download(together, expected.shape()), each = download(alone, expected.shape());
    EXPECT_EQ(std::memcmp(batched.data(), each.data(), sizeof(float) * static_cast<size_t>(each.numel())), 0);
    EXPECT_LE(scaled_max_error(batched, expected), 2e-6);
  }
}

// The upscaling of a batch: maps stacked along the height, each plus the same
// addend map, are each map's transposed conv alone, bit for bit.
TEST_F(VulkanOpsTest, ConvTranspose2x2OfStackedMapsAddsOneMapToEach) {
  const int64_t maps = 3, height = 3, width = 5, in_channels = 12, out_channels = 7;
  const int64_t map_out = 4 * height * width * out_channels;
  const Tensor x = random_tensor({maps * height, width, in_channels}, 115);
  const Tensor weight = random_tensor({in_channels, out_channels, 2, 2}, 116, 0.3f);
  const Tensor bias = random_tensor({out_channels}, 117);
  const Tensor skip = random_tensor({2 * height, 2 * width, out_channels}, 118);
  const DeviceBuffer dx = upload(x), dw = upload(weight), db = upload(bias), dskip = upload(skip);
  const DeviceBuffer together = zeros(maps * map_out), alone = zeros(maps * map_out);
  CommandRecorder recorder(context());
  ops().conv_transpose2x2(recorder, all_elements(dx), maps * height, width, in_channels, all_elements(dw),
                          all_elements(db), out_channels, all_elements(dskip), all_elements(together), map_out);
  for (int64_t m = 0; m < maps; ++m) {
    const DeviceElements map_x{&dx, static_cast<uint64_t>(m * height * width * in_channels),
                               static_cast<uint64_t>(height * width * in_channels)};
    const DeviceElements map_y{&alone, static_cast<uint64_t>(m * map_out), static_cast<uint64_t>(map_out)};
    ops().conv_transpose2x2(recorder, map_x, height, width, in_channels, all_elements(dw), all_elements(db),
                            out_channels, all_elements(dskip), map_y);
  }
  // An addend that is not whole output maps is refused.
  EXPECT_THROW(ops().conv_transpose2x2(recorder, all_elements(dx), maps * height, width, in_channels,
                                       all_elements(dw), all_elements(db), out_channels, all_elements(dskip),
                                       all_elements(together), map_out - 1),
               Error);
  recorder.submit();
  const Tensor batched = download(together, {maps * map_out}), each = download(alone, {maps * map_out});
  EXPECT_EQ(std::memcmp(batched.data(), each.data(), sizeof(float) * static_cast<size_t>(each.numel())), 0);
}

}  // namespace
}  // namespace sam2rt::testing

#endif
