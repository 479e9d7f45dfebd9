#include "kernels/window_attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/attention.h"
#include "kernels/window.h"

namespace sam2rt {

namespace {

// What every window of one call shares.
struct WindowShape {
  int64_t window = 0, out_window = 0, channels = 0, heads = 0;
  bool q_pool = false, bf16_products = false;

  int64_t keys() const { return window * window; }
  int64_t queries() const { return out_window * out_window; }
  int64_t token() const { return 3 * channels; }
};

// The shape of every window of a grid `grid` ([H, W, 3C] or its inputs'), checked.
WindowShape window_shape(int64_t window, int64_t channels, int64_t heads, bool q_pool, bool bf16_products,
                         const Shape& grid) {
  const WindowShape shape{.window = window,
                          .out_window = q_pool ? window / 2 : window,
                          .channels = channels,
                          .heads = heads,
                          .q_pool = q_pool,
                          .bf16_products = bf16_products};
  if (shape.window < 1 || shape.heads < 1 || shape.channels % shape.heads != 0 ||
      (shape.q_pool && shape.window % 2 != 0)) {
    throw Error("windowed attention: bad window " + std::to_string(shape.window) + " or heads " +
                std::to_string(shape.heads) + " for " + shape_to_string(grid));
  }
  return shape;
}

// Per-thread buffers kept between calls and only grown: no allocation in the
// encoder's steady state.
struct WindowScratch {
  std::vector<float> tokens, pooled, attended;
  std::vector<char> inputs;     // the tiled form: a group of windows' tokens, inputs of the qkv Linear
  std::vector<float> projected;  // and their qkv

  static WindowScratch& of_this_thread(const WindowShape& shape) {
    thread_local WindowScratch scratch;
    grow(scratch.tokens, shape.keys() * shape.token());
    grow(scratch.pooled, shape.q_pool ? shape.queries() * shape.channels : 0);
    grow(scratch.attended, shape.queries() * shape.channels);
    return scratch;
  }

  template <typename T>
  static void grow(std::vector<T>& buffer, int64_t size) {
    if (static_cast<int64_t>(buffer.size()) < size) buffer.resize(static_cast<size_t>(size));
  }
};

// Multi-head attention inside one window: `tokens` holds its window x window
// tokens (q | k | v each, row after row of the window); with q_pool, q is
// max-pooled 2x2 first. Writes the queries' results, row after row, to `attended`
// [out_window^2, C].
void attend_window(const float* tokens, const WindowShape& shape, WindowScratch& scratch, float* attended) {
  const int64_t window = shape.window, out_window = shape.out_window, channels = shape.channels;
  const int64_t token = shape.token(), head_dim = channels / shape.heads;
  AttentionArgs args;
  if (shape.q_pool) {
    for (int64_t py = 0; py < out_window; ++py) {
      for (int64_t px = 0; px < out_window; ++px) {
        const float* p00 = tokens + (2 * py * window + 2 * px) * token;
        const float* p01 = p00 + token;
        const float* p10 = p00 + window * token;
        const float* p11 = p10 + token;
        float* dst = scratch.pooled.data() + (py * out_window + px) * channels;
        for (int64_t i = 0; i < channels; ++i) dst[i] = std::max(std::max(p00[i], p01[i]), std::max(p10[i], p11[i]));
      }
    }
    args.q = scratch.pooled.data();
    args.ldq = channels;
  } else {
    args.q = tokens;
    args.ldq = token;
  }
  args.nq = shape.queries();
  args.nk = shape.keys();
  args.heads = shape.heads;
  args.head_dim = head_dim;
  args.k = tokens + channels;
  args.ldk = token;
  args.v = tokens + 2 * channels;
  args.ldv = token;
  args.out = attended;
  args.ldo = channels;
  args.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)));
  args.bf16_products = shape.bf16_products;
  attention_serial(args);
}

// Copies window n's attended queries (row after row) to their place in `out`.
void place_window(const float* attended, int64_t n, int64_t cols, const WindowShape& shape, Tensor& out) {
  const int64_t out_height = out.dim(0), out_width = out.dim(1), channels = shape.channels;
  const int64_t oy0 = n / cols * shape.out_window, ox0 = n % cols * shape.out_window;
  const int64_t run = std::min(shape.out_window, out_width - ox0);
  for (int64_t y = 0; y < shape.out_window && oy0 + y < out_height; ++y) {
    std::memcpy(out.data() + ((oy0 + y) * out_width + ox0) * channels, attended + y * shape.out_window * channels,
                static_cast<size_t>(run * channels) * sizeof(float));
  }
}

// Runs body(item) for items [0, count) on the OpenMP threads, handed out one at
// a time; the first exception thrown is rethrown once all have run.
template <typename Body>
void for_each_item(int64_t count, Body body) {
  std::exception_ptr failure;
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t item = 0; item < count; ++item) {
    try {
      body(item);
    } catch (...) {
#pragma omp critical(window_attention_failure)
      if (!failure) failure = std::current_exception();
    }
  }
  if (failure) std::rethrow_exception(failure);
}

// Rows of one thread's qkv GEMM in the tiled form: its output (256 x 3C floats,
// 288 KB at C = 96, 576 KB at C = 192) stays in a Zen core's 1 MB L2 until the
// windows are attended.
constexpr int64_t kTiledRows = 256;

}  // namespace

void windowed_attention(const Tensor& qkv, int64_t window, const float* pad_token, int64_t heads, bool q_pool,
                        Tensor& out, bool bf16_products) {
  if (qkv.rank() != 3 || qkv.dim(2) % 3 != 0) {
    throw Error("windowed attention: qkv must be [H, W, 3C], got " + shape_to_string(qkv.shape()));
  }
  const int64_t height = qkv.dim(0), width = qkv.dim(1);
  const WindowShape shape = window_shape(window, qkv.dim(2) / 3, heads, q_pool, bf16_products, qkv.shape());
  const int64_t out_height = q_pool ? height / 2 : height, out_width = q_pool ? width / 2 : width;
  const int64_t rows = windows_along(height, window), cols = windows_along(width, window);
  if (out.shape() != Shape{out_height, out_width, shape.channels} ||
      windows_along(out_height, shape.out_window) != rows || windows_along(out_width, shape.out_window) != cols) {
    throw Error("windowed attention: output is " + shape_to_string(out.shape()) + ", expected [" +
                std::to_string(out_height) + ", " + std::to_string(out_width) + ", " +
                std::to_string(shape.channels) + "] on the same window grid");
  }
  const int64_t token = shape.token();
  const size_t token_bytes = static_cast<size_t>(token) * sizeof(float);

#pragma omp parallel
  {
    WindowScratch& scratch = WindowScratch::of_this_thread(shape);
#pragma omp for schedule(dynamic)
    for (int64_t n = 0; n < rows * cols; ++n) {
      const int64_t y0 = n / cols * window, x0 = n % cols * window;
      for (int64_t y = 0; y < window; ++y) {
        const int64_t run = y0 + y < height ? std::min(window, width - x0) : 0;
        float* dst = scratch.tokens.data() + y * window * token;
        if (run > 0) std::memcpy(dst, qkv.data() + ((y0 + y) * width + x0) * token, static_cast<size_t>(run) * token_bytes);
        for (int64_t x = run; x < window; ++x) std::memcpy(dst + x * token, pad_token, token_bytes);
      }
      attend_window(scratch.tokens.data(), shape, scratch, scratch.attended.data());
      place_window(scratch.attended.data(), n, cols, shape, out);
    }
  }
}

bool windows_tile(int64_t height, int64_t width, int64_t window) {
  return window > 0 && height % window == 0 && width % window == 0;
}

void qkv_windowed_attention_tiled(const PackedLinear& qkv, const void* x, int64_t height, int64_t width,
                                  int64_t window, int64_t heads, bool q_pool, Tensor& out, bool bf16_products) {
  if (!windows_tile(height, width, window) || qkv.out_features() % 3 != 0) {
    throw Error("windowed attention: " + std::to_string(window) + "x" + std::to_string(window) +
                " windows do not tile the " + std::to_string(height) + "x" + std::to_string(width) +
                " grid, or the qkv layer's " + std::to_string(qkv.out_features()) + " outputs are not 3 x C");
  }
  const WindowShape shape =
      window_shape(window, qkv.out_features() / 3, heads, q_pool, bf16_products, Shape{height, width, qkv.out_features()});
  const int64_t out_height = q_pool ? height / 2 : height, out_width = q_pool ? width / 2 : width;
  if (out.shape() != Shape{out_height, out_width, shape.channels}) {
    throw Error("windowed attention: output is " + shape_to_string(out.shape()) + ", expected [" +
                std::to_string(out_height) + ", " + std::to_string(out_width) + ", " +
                std::to_string(shape.channels) + "]");
  }
  const int64_t cols = width / window, windows = height / window * cols;
  const int64_t per_group = std::max<int64_t>(1, kTiledRows / shape.keys());
  const int64_t groups = (windows + per_group - 1) / per_group;
  const size_t input_bytes =
      static_cast<size_t>(qkv.in_features()) * (qkv.precision() == MatmulPrecision::bf16 ? 2 : 4);
  const auto* grid = static_cast<const char*>(x);

  for_each_item(groups, [&](int64_t group) {
    WindowScratch& scratch = WindowScratch::of_this_thread(shape);
    const int64_t first = group * per_group, count = std::min(per_group, windows - first);
    const int64_t tokens = count * shape.keys();
    WindowScratch::grow(scratch.inputs, tokens * static_cast<int64_t>(input_bytes));
    WindowScratch::grow(scratch.projected, tokens * shape.token());
    // The group's tokens window after window, each window row after row: the
    // qkv rows of a window then lie together, as attend_window reads them.
    char* input = scratch.inputs.data();
    for (int64_t n = first; n < first + count; ++n) {
      const int64_t y0 = n / cols * window, x0 = n % cols * window;
      for (int64_t y = 0; y < window; ++y) {
        std::memcpy(input, grid + static_cast<size_t>((y0 + y) * width + x0) * input_bytes,
                    static_cast<size_t>(window) * input_bytes);
        input += static_cast<size_t>(window) * input_bytes;
      }
    }
    qkv.forward_on_this_thread(scratch.inputs.data(), tokens, scratch.projected.data());
    for (int64_t i = 0; i < count; ++i) {
      attend_window(scratch.projected.data() + i * shape.keys() * shape.token(), shape, scratch,
                    scratch.attended.data());
      place_window(scratch.attended.data(), first + i, cols, shape, out);
    }
  });
}

}  // namespace sam2rt
