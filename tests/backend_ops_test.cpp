// Every method of the Backend interface (backends/backend.h), on a table of
// shapes per op, on every backend present, against the plain references of
// backend_op_reference.h: in the manner of ggml's test-backend-ops. BackendOps
// runs the table on the CPU backend, VulkanBackendOps on a Vulkan device (with
// the validation layers on), or skips where there is none. Tolerances, not bits:
// the references sum in double, the kernels in float and in other orders, and a
// device may or may not fuse multiply-adds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <iostream>
#include <iterator>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "backend_op_reference.h"
#include "backends/backend.h"
#include "backends/cpu_backend.h"
#include "backends/row_source.h"
#include "core/error.h"
#include "kernels/matmul.h"
#include "random_tensor.h"

#ifdef SAM2RT_VULKAN
#include "backends/vulkan/vulkan_device_description.h"
#include "vulkan_test_context.h"
#endif

namespace sam2rt::testing {
namespace {

namespace ref = reference;

// What a case's backend gave and what the reference gives. Cases of methods
// with nothing to compare (a query, a refusal) check with EXPECT_* themselves
// and leave both empty.
struct Outcome {
  Tensor actual, expected;
};

struct OpCase {
  std::string op;         // the Backend method it covers
  std::string arguments;  // shapes and options, for messages
  // Largest |actual - expected| / max(1, |expected|) allowed.
  double tolerance = 0.0;
  // bfloat16 tensors, layers or products: a backend that computes in fp32 only
  // (Vulkan) must refuse the case with Error.
  bool bf16 = false;
  std::function<Outcome(Backend&)> run;
};

// Rounding of float32 sums grows as the square root of their length (random
// signs): 1e-5 up to 256 terms, 3x and more above the largest error seen on the
// CPU and on lavapipe.
double fp32_tolerance(int64_t terms) {
  return 1e-5 * std::max(1.0, std::sqrt(static_cast<double>(terms) / 256.0));
}

// A bfloat16 output is within half its ulp, 2^-8 relative, of the exact value.
constexpr double kBf16OutputTolerance = 5e-3;

double largest_error(const Tensor& actual, const Tensor& expected) {
  double error = 0.0;
  for (int64_t i = 0; i < expected.numel(); ++i) {
    const double difference = std::abs(static_cast<double>(actual[i]) - expected[i]);
    if (!std::isfinite(difference)) return INFINITY;
    error = std::max(error, difference / std::max(1.0, std::abs(static_cast<double>(expected[i]))));
  }
  return error;
}

Tensor as_tensor(Shape shape, const std::vector<double>& values) {
  Tensor t(std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t[i] = static_cast<float>(values[static_cast<size_t>(i)]);
  return t;
}

std::string dims(std::initializer_list<int64_t> values) {
  std::string text;
  for (const int64_t v : values) text += (text.empty() ? "" : "x") + std::to_string(v);
  return text;
}

// A tensor of `backend` holding a copy of `value`: the CPU's input() shares
// the caller's memory, which in-place ops would write.
DeviceTensor input_of(Backend& backend, const Tensor& value) { return backend.input(value.clone()); }

// A bf16 tensor of `backend` as float32, read through an identity bf16 Linear
// layer (exact: each output is one product by 1.0). Backends download float32 only.
Tensor download_bf16(Backend& backend, const DeviceTensor& x) {
  const int64_t width = x.dim(-1), rows = x.numel() / width;
  Tensor identity({width, width});
  for (int64_t i = 0; i < width; ++i) identity[i * width + i] = 1.0f;
  const LinearHandle layer = backend.linear(identity, Tensor(), Precision::bf16);
  DeviceTensor y = backend.tensor({rows, width});
  run_once(backend, [&] { backend.linear_forward(layer, x, rows, y, Epilogue::none); });
  return backend.download(y).reshaped(x.shape());
}

// x as a bf16 tensor of `backend` (convert on the backend).
DeviceTensor bf16_input(Backend& backend, const Tensor& x) {
  DeviceTensor y = backend.tensor(x.shape(), ElementType::bf16);
  const DeviceTensor source = input_of(backend, x);
  run_once(backend, [&] { backend.convert(source, y); });
  return y;
}

// The Hiera position embedding's role: a table computed row by row.
class FormulaRows final : public RowSource {
 public:
  explicit FormulaRows(Shape shape) : shape_(std::move(shape)) {}
  Shape shape() const override { return shape_; }
  void row(int64_t y, float* out) const override {
    for (int64_t i = 0; i < shape_[1] * shape_[2]; ++i) out[i] = value(y, i);
  }
  static float value(int64_t y, int64_t i) {
    return std::sin(0.37f * static_cast<float>(y) + 0.011f * static_cast<float>(i));
  }

 private:
  Shape shape_;
};

const char* epilogue_name(Epilogue epilogue) {
  switch (epilogue) {
    case Epilogue::none:
      return "none";
    case Epilogue::gelu:
      return "gelu";
    case Epilogue::accumulate:
      return "accumulate";
    case Epilogue::relu:
      return "relu";
  }
  return "?";
}

// reference::linear's outputs through the epilogue, onto `residual` for accumulate.
Tensor linear_expected(const Tensor& x, int64_t rows, const Tensor& weight, const Tensor& bias, Epilogue epilogue,
                       const Tensor& residual) {
  std::vector<double> y = ref::linear(x, rows, weight, bias);
  for (size_t i = 0; i < y.size(); ++i) {
    if (epilogue == Epilogue::gelu) y[i] = ref::gelu(y[i]);
    if (epilogue == Epilogue::relu) y[i] = std::max(y[i], 0.0);
    if (epilogue == Epilogue::accumulate) y[i] += residual[static_cast<int64_t>(i)];
  }
  return as_tensor({rows, weight.dim(0)}, y);
}

// ---- The model's ops ----

void add_conv2d_cases(std::vector<OpCase>& cases) {
  struct Conv {
    int64_t in_channels, height, width, out_channels, kernel, stride, padding;
  };
  // Hiera's patch embed (7x7, stride 4, padding 3) on images whose sizes are not
  // multiples of the stride, to Tiny's 96 channels, and across the device
  // kernel's 128 x 128 tiles (306 pixels, 130 channels); a 2x2 stride-2 conv.
  for (const Conv c : {Conv{3, 18, 21, 5, 7, 4, 3}, Conv{2, 6, 8, 3, 2, 2, 0}, Conv{3, 32, 28, 96, 7, 4, 3},
                       Conv{3, 70, 66, 130, 7, 4, 3}}) {
    cases.push_back({"conv2d_to_hwc",
                     dims({c.in_channels, c.height, c.width}) + " -> " + std::to_string(c.out_channels) + ", " +
                         std::to_string(c.kernel) + "x" + std::to_string(c.kernel) + " stride " +
                         std::to_string(c.stride) + " padding " + std::to_string(c.padding),
                     fp32_tolerance(c.in_channels * c.kernel * c.kernel), false, [c](Backend& backend) {
                       const Tensor image = random_tensor({1, c.in_channels, c.height, c.width}, 71);
                       const Tensor weight =
                           random_tensor({c.out_channels, c.in_channels, c.kernel, c.kernel}, 72, 0.3f);
                       const Tensor bias = random_tensor({c.out_channels}, 73);
                       const DeviceTensor x = input_of(backend, image), w = backend.constant(weight),
                                          b = backend.constant(bias);
                       DeviceTensor y;
                       run_once(backend, [&] { y = backend.conv2d_to_hwc(x, w, b, c.stride, c.padding); });
                       const int64_t out_height = (c.height + 2 * c.padding - c.kernel) / c.stride + 1;
                       const int64_t out_width = (c.width + 2 * c.padding - c.kernel) / c.stride + 1;
                       Tensor expected({out_height, out_width, c.out_channels});
                       for (int64_t oy = 0; oy < out_height; ++oy) {
                         for (int64_t ox = 0; ox < out_width; ++ox) {
                           for (int64_t o = 0; o < c.out_channels; ++o) {
                             double sum = bias[o];
                             for (int64_t i = 0; i < c.in_channels; ++i) {
                               for (int64_t ky = 0; ky < c.kernel; ++ky) {
                                 for (int64_t kx = 0; kx < c.kernel; ++kx) {
                                   const int64_t iy = oy * c.stride - c.padding + ky;
                                   const int64_t ix = ox * c.stride - c.padding + kx;
                                   if (iy < 0 || iy >= c.height || ix < 0 || ix >= c.width) continue;
                                   sum += static_cast<double>(image[(i * c.height + iy) * c.width + ix]) *
                                          weight[((o * c.in_channels + i) * c.kernel + ky) * c.kernel + kx];
                                 }
                               }
                             }
                             expected[(oy * out_width + ox) * c.out_channels + o] = static_cast<float>(sum);
                           }
                         }
                       }
                       return Outcome{backend.download(y), expected};
                     }});
  }
}

// x + the table of constant_rows; onto zeros, the table itself.
void add_row_table_cases(std::vector<OpCase>& cases) {
  for (const Shape& shape : {Shape{5, 7, 12}, Shape{16, 16, 96}}) {
    for (const bool onto_zeros : {false, true}) {
      cases.push_back({onto_zeros ? "constant_rows" : "add_rows", shape_to_string(shape), 0.0, false,
                       [shape, onto_zeros](Backend& backend) {
                         const Tensor start = onto_zeros ? Tensor(shape) : random_tensor(shape, 81);
                         const DeviceTensor table = backend.constant_rows(std::make_shared<FormulaRows>(shape));
                         DeviceTensor x = input_of(backend, start);
                         run_once(backend, [&] { backend.add_rows(x, table); });
                         Tensor expected(shape);
                         const int64_t row = shape[1] * shape[2];
                         for (int64_t i = 0; i < expected.numel(); ++i) {
                           expected[i] = start[i] + FormulaRows::value(i / row, i % row);
                         }
                         return Outcome{backend.download(x), expected};
                       }});
    }
  }
}

void add_layer_norm_cases(std::vector<OpCase>& cases) {
  struct Norm {
    int64_t rows, channels;
    float eps;
    bool bf16_out;
  };
  // Hiera's widths (eps 1e-6), the decoder's 256 (1e-5), the bf16 path's output.
  for (const Norm n : {Norm{50, 96, 1e-6f, false}, Norm{9, 768, 1e-6f, false}, Norm{7, 256, 1e-5f, false},
                       Norm{33, 192, 1e-6f, false}, Norm{9, 96, 1e-6f, true}, Norm{4, 384, 1e-6f, true}}) {
    cases.push_back({"layer_norm_rows", dims({n.rows, n.channels}) + (n.bf16_out ? " to bf16" : ""),
                     n.bf16_out ? kBf16OutputTolerance : fp32_tolerance(n.channels), n.bf16_out, [n](Backend& backend) {
                       Tensor x = random_tensor({n.rows, n.channels}, 21, 3.0f);
                       for (int64_t i = 0; i < x.numel(); ++i) x[i] += static_cast<float>(i / n.channels % 7) - 3.0f;
                       const Tensor weight = random_tensor({n.channels}, 22), bias = random_tensor({n.channels}, 23);
                       const DeviceTensor dx = input_of(backend, x), w = backend.constant(weight),
                                          b = backend.constant(bias);
                       DeviceTensor y = backend.tensor(x.shape(), n.bf16_out ? ElementType::bf16 : ElementType::f32);
                       run_once(backend, [&] { backend.layer_norm_rows(dx, w, b, n.eps, y); });
                       Tensor expected(x.shape());
                       for (int64_t r = 0; r < n.rows; ++r) {
                         const float* row = x.data() + r * n.channels;
                         double mean = 0.0, variance = 0.0;
                         for (int64_t c = 0; c < n.channels; ++c) mean += row[c];
                         mean /= static_cast<double>(n.channels);
                         for (int64_t c = 0; c < n.channels; ++c) variance += (row[c] - mean) * (row[c] - mean);
                         variance /= static_cast<double>(n.channels);
                         for (int64_t c = 0; c < n.channels; ++c) {
                           expected[r * n.channels + c] = static_cast<float>(
                               (row[c] - mean) / std::sqrt(variance + n.eps) * weight[c] + bias[c]);
                         }
                       }
                       return Outcome{n.bf16_out ? download_bf16(backend, y) : backend.download(y), expected};
                     }});
  }
}

void add_convert_cases(std::vector<OpCase>& cases) {
  for (const Shape& shape : {Shape{3, 100}, Shape{64, 96}}) {
    cases.push_back({"convert", shape_to_string(shape) + " to bf16", 0.0, true, [shape](Backend& backend) {
                       const Tensor x = random_tensor(shape, 24, 5.0f);
                       return Outcome{download_bf16(backend, bf16_input(backend, x)), ref::bf16_rounded(x)};
                     }});
  }
}

struct LinearShape {
  int64_t rows, in, out;
  bool bias;
};

// Linear layers: Tiny's qkv of its first two stages (96 -> 288, 192 -> 576) and
// its last width (768), the decoder's 256-wide projections and those of its
// image tokens down to 128, without a bias, and cut at the device kernels'
// tiles: 256 rows by 16N outputs on a CPU device (300 rows to N = 8, 4, 2, 1
// sixteens of outputs and less), 64 x 64 x 16 on GPUs.
constexpr LinearShape kLinearShapes[] = {{37, 40, 24, true},   {64, 96, 288, true},  {16, 192, 576, true},
                                         {8, 768, 768, true},  {7, 256, 256, true},  {256, 256, 128, true},
                                         {5, 96, 17, false},   {300, 40, 150, true}, {300, 40, 50, true},
                                         {300, 40, 20, true},  {300, 40, 9, true}};

void add_linear_cases(std::vector<OpCase>& cases) {
  for (const LinearShape s : kLinearShapes) {
    for (const Epilogue epilogue : {Epilogue::none, Epilogue::gelu, Epilogue::accumulate, Epilogue::relu}) {
      cases.push_back({"linear_forward", dims({s.rows, s.in, s.out}) + (s.bias ? "" : " no bias") + ", fp32, " +
                                             epilogue_name(epilogue),
                       fp32_tolerance(s.in), false, [s, epilogue](Backend& backend) {
                         const Tensor x = random_tensor({s.rows, s.in}, 11);
                         const Tensor weight = random_tensor({s.out, s.in}, 12, 0.3f);
                         const Tensor bias = s.bias ? random_tensor({s.out}, 13) : Tensor();
                         const Tensor residual = random_tensor({s.rows, s.out}, 14);
                         const LinearHandle layer = backend.linear(weight, bias, Precision::fp32);
                         const DeviceTensor dx = input_of(backend, x);
                         DeviceTensor y = input_of(backend, residual);
                         run_once(backend, [&] { backend.linear_forward(layer, dx, s.rows, y, epilogue); });
                         return Outcome{backend.download(y),
                                        linear_expected(x, s.rows, weight, bias, epilogue, residual)};
                       }});
    }
  }
  // bf16 layers: bf16 input, float32 output (every epilogue) or bf16 output.
  for (const LinearShape s : {kLinearShapes[0], kLinearShapes[1]}) {
    for (const Epilogue epilogue : {Epilogue::none, Epilogue::gelu, Epilogue::accumulate, Epilogue::relu}) {
      for (const bool bf16_out : {false, true}) {
        if (bf16_out && epilogue == Epilogue::accumulate) continue;  // no model adds into a bf16 tensor
        cases.push_back(
            {"linear_forward",
             dims({s.rows, s.in, s.out}) + ", bf16 to " + (bf16_out ? "bf16, " : "fp32, ") + epilogue_name(epilogue),
             bf16_out ? kBf16OutputTolerance : fp32_tolerance(s.in), true, [s, epilogue, bf16_out](Backend& backend) {
               const Tensor x = random_tensor({s.rows, s.in}, 15);
               const Tensor weight = random_tensor({s.out, s.in}, 16, 0.3f), bias = random_tensor({s.out}, 17);
               const Tensor residual = random_tensor({s.rows, s.out}, 18);
               const LinearHandle layer = backend.linear(weight, bias, Precision::bf16);
               const DeviceTensor dx = bf16_input(backend, x);
               DeviceTensor y =
                   bf16_out ? backend.tensor({s.rows, s.out}, ElementType::bf16) : input_of(backend, residual);
               run_once(backend, [&] { backend.linear_forward(layer, dx, s.rows, y, epilogue); });
               return Outcome{bf16_out ? download_bf16(backend, y) : backend.download(y),
                              linear_expected(ref::bf16_rounded(x), s.rows, ref::bf16_rounded(weight), bias, epilogue,
                                              residual)};
             }});
      }
    }
  }
  // The GELU epilogue alone (an identity layer) over both tails, [-10, 10].
  cases.push_back({"linear_forward", "2001x1x1 identity, fp32, gelu over [-10, 10]", 1e-6, false, [](Backend& backend) {
                     const int64_t rows = 2001;
                     Tensor x({rows, 1});
                     for (int64_t i = 0; i < rows; ++i) x[i] = -10.0f + 0.01f * static_cast<float>(i);
                     const LinearHandle identity =
                         backend.linear(Tensor::filled({1, 1}, 1.0f), Tensor(), Precision::fp32);
                     const DeviceTensor dx = input_of(backend, x);
                     DeviceTensor y = backend.tensor({rows, 1});
                     run_once(backend, [&] { backend.linear_forward(identity, dx, rows, y, Epilogue::gelu); });
                     Tensor expected({rows, 1});
                     for (int64_t i = 0; i < rows; ++i) expected[i] = static_cast<float>(ref::gelu(x[i]));
                     return Outcome{backend.download(y), expected};
                   }});
  // The handle a backend makes.
  for (const Precision precision : {Precision::fp32, Precision::bf16}) {
    cases.push_back({"linear", std::string("24x40, ") + precision_name(precision), 0.0,
                     precision == Precision::bf16, [precision](Backend& backend) {
                       const LinearHandle layer =
                           backend.linear(random_tensor({24, 40}, 19), random_tensor({24}, 20), precision);
                       EXPECT_NE(layer.impl, nullptr);
                       EXPECT_EQ(layer.in_features, 40);
                       EXPECT_EQ(layer.out_features, 24);
                       EXPECT_EQ(layer.precision, precision);
                       return Outcome{};
                     }});
  }
}

// bf16 layers against a reference on the same bf16-rounded operands and hidden
// activations: what differs is float32 accumulation and the hidden values
// that round to the other bf16 neighbour (1e-4 seen at 2048).
constexpr double kBf16MlpTolerance = 5e-4;

void add_mlp_cases(std::vector<OpCase>& cases) {
  struct Mlp {
    int64_t rows, width, hidden;
  };
  // A small block, Tiny's first stage (96 -> 384), the decoder's (256 -> 2048).
  for (const Mlp m : {Mlp{20, 24, 96}, Mlp{16, 96, 384}, Mlp{7, 256, 2048}}) {
    for (const Precision precision : {Precision::fp32, Precision::bf16}) {
      const bool bf16 = precision == Precision::bf16;
      cases.push_back({"mlp_forward", dims({m.rows, m.width, m.hidden}) + ", " + precision_name(precision),
                       bf16 ? kBf16MlpTolerance : fp32_tolerance(m.hidden), bf16,
                       [m, precision, bf16](Backend& backend) {
                         const Tensor x = random_tensor({m.rows, m.width}, 31);
                         const Tensor w1 = random_tensor({m.hidden, m.width}, 32, 0.3f);
                         const Tensor b1 = random_tensor({m.hidden}, 33);
                         const Tensor w2 = random_tensor({m.width, m.hidden}, 34, 0.1f);
                         const Tensor b2 = random_tensor({m.width}, 35);
                         const Tensor residual = random_tensor({m.rows, m.width}, 36);
                         const LinearHandle expand = backend.linear(w1, b1, precision);
                         const LinearHandle contract = backend.linear(w2, b2, precision);
                         const DeviceTensor dx = bf16 ? bf16_input(backend, x) : input_of(backend, x);
                         DeviceTensor y = input_of(backend, residual);
                         run_once(backend, [&] { backend.mlp_forward(expand, contract, dx, m.rows, y); });
                         // The hidden activations as the expand layer stores them (bf16 for bf16 layers).
                         Tensor hidden = linear_expected(bf16 ? ref::bf16_rounded(x) : x, m.rows,
                                                         bf16 ? ref::bf16_rounded(w1) : w1, b1, Epilogue::gelu,
                                                         Tensor());
                         if (bf16) hidden = ref::bf16_rounded(hidden);
                         return Outcome{backend.download(y),
                                        linear_expected(hidden, m.rows, bf16 ? ref::bf16_rounded(w2) : w2, b2,
                                                        Epilogue::accumulate, residual)};
                       }});
    }
  }
}

struct WindowShape {
  int64_t height, width, channels, window, heads;
  bool q_pool;
};

std::string window_arguments(const WindowShape& w) {
  return dims({w.height, w.width, w.channels}) + " window " + std::to_string(w.window) + ", " +
         std::to_string(w.heads) + " heads" + (w.q_pool ? ", q pooled" : "");
}

// Windows that tile the grid and padded ones, pooled and not, one and several
// heads; Tiny's first stage (96 channels, windows of 8) pooled to the second.
constexpr WindowShape kWindowShapes[] = {{16, 16, 16, 8, 2, false}, {12, 9, 16, 4, 1, false},
                                         {11, 13, 16, 8, 2, false}, {16, 16, 16, 4, 2, true},
                                         {10, 10, 16, 4, 1, true},  {16, 16, 96, 8, 1, true}};

// Scores of a few units carry a rounding of |s| 2^-23 into exp(): attention
// outputs differ from the double reference by a few 1e-6. bf16 products round
// q, k, the probabilities and v to 8 bits (the reference does not): 6.4e-3 seen.
constexpr double kAttentionTolerance = 1e-5, kBf16AttentionTolerance = 1.5e-2;

void add_windowed_attention_cases(std::vector<OpCase>& cases) {
  for (const WindowShape w : kWindowShapes) {
    for (const bool bf16_products : {false, true}) {
      if (bf16_products && w.channels != 96) continue;
      cases.push_back({"windowed_attention", window_arguments(w) + (bf16_products ? ", bf16 products" : ""),
                       bf16_products ? kBf16AttentionTolerance : kAttentionTolerance, bf16_products,
                       [w, bf16_products](Backend& backend) {
                         const Tensor qkv = random_tensor({w.height, w.width, 3 * w.channels}, 51, 2.0f);
                         const Tensor pad = random_tensor({3 * w.channels}, 52);
                         const int64_t out_height = w.q_pool ? w.height / 2 : w.height;
                         const int64_t out_width = w.q_pool ? w.width / 2 : w.width;
                         const DeviceTensor dqkv = input_of(backend, qkv), dpad = backend.constant(pad);
                         DeviceTensor out = backend.tensor({out_height, out_width, w.channels});
                         run_once(backend, [&] {
                           backend.windowed_attention(dqkv, w.window, dpad, w.heads, w.q_pool, out, bf16_products);
                         });
                         return Outcome{backend.download(out),
                                        ref::windowed_attention(qkv, w.window, pad, w.heads, w.q_pool)};
                       }});
    }
  }
}

void add_qkv_windowed_attention_cases(std::vector<OpCase>& cases) {
  struct QkvCase {
    WindowShape w;
    int64_t in;
    Precision precision;
    bool bf16_products;
  };
  // The CPU projects and attends groups of windows per thread where the windows
  // tile the grid (16 x 12 of 4; 40 x 24: 60 windows in groups of 16, the last
  // one 12), bands of window rows where they tile the rows only (12 x 10), the
  // whole grid otherwise (14 x 10); a bf16 layer with and without bf16 products.
  for (const QkvCase c : {QkvCase{{16, 12, 16, 4, 2, false}, 24, Precision::fp32, false},
                          QkvCase{{40, 24, 16, 4, 2, false}, 24, Precision::fp32, false},
                          QkvCase{{40, 24, 16, 4, 2, true}, 24, Precision::bf16, false},
                          QkvCase{{16, 12, 16, 4, 2, true}, 24, Precision::fp32, false},
                          QkvCase{{14, 10, 16, 4, 4, false}, 24, Precision::fp32, false},
                          QkvCase{{12, 10, 16, 4, 2, true}, 24, Precision::fp32, false},
                          QkvCase{{16, 16, 96, 8, 1, false}, 96, Precision::fp32, false},
                          QkvCase{{16, 12, 16, 4, 2, true}, 24, Precision::bf16, false},
                          QkvCase{{16, 16, 96, 8, 1, true}, 96, Precision::bf16, true}}) {
    const bool bf16 = c.precision == Precision::bf16;
    cases.push_back(
        {"qkv_windowed_attention",
         window_arguments(c.w) + " from " + std::to_string(c.in) + ", " + precision_name(c.precision) +
             (c.bf16_products ? ", bf16 products" : ""),
         c.bf16_products ? kBf16AttentionTolerance : kAttentionTolerance, bf16, [c, bf16](Backend& backend) {
           const WindowShape& w = c.w;
           const Tensor x = random_tensor({w.height, w.width, c.in}, 43);
           const Tensor weight = random_tensor({3 * w.channels, c.in}, 41, 0.3f);
           const Tensor bias = random_tensor({3 * w.channels}, 42);
           const LinearHandle layer = backend.linear(weight, bias, c.precision);
           const DeviceTensor dx = bf16 ? bf16_input(backend, x) : input_of(backend, x), pad = backend.constant(bias);
           const int64_t out_height = w.q_pool ? w.height / 2 : w.height, out_width = w.q_pool ? w.width / 2 : w.width;
           DeviceTensor out = backend.tensor({out_height, out_width, w.channels});
           run_once(backend, [&] {
             backend.qkv_windowed_attention(layer, dx, w.height, w.width, w.window, pad, w.heads, w.q_pool, out,
                                            c.bf16_products);
           });
           const Tensor qkv = linear_expected(bf16 ? ref::bf16_rounded(x) : x, w.height * w.width,
                                              bf16 ? ref::bf16_rounded(weight) : weight, bias, Epilogue::none, Tensor())
                                  .reshaped({w.height, w.width, 3 * w.channels});
           return Outcome{backend.download(out), ref::windowed_attention(qkv, w.window, bias, w.heads, w.q_pool)};
         }});
  }
}

void add_attention_cases(std::vector<OpCase>& cases) {
  struct Attention {
    int64_t nq, nk, heads, head_dim, batches;
    bool interleaved;  // q, k and v at offsets in one qkv tensor [nk, 3 * width] (nq of its tokens query)
    bool shared_q, shared_kv;
    bool bf16_products;
    int64_t value_dim = 0;  // values narrower than the keys (0: head_dim)
  };
  // Interleaved self-attention with 3 heads of 96 over 300 keys (not a multiple
  // of the tiled kernel's 32); the decoder's 8 heads: tokens against a 16x16
  // image and back, at 256 channels (32 per head) and downsampled to 128 (16);
  // narrow heads (2, 6: the scalar kernel); 1100 keys (through a scores scratch
  // on a CPU device); batches of prompts with shared image keys or shared queries;
  // heads of 256 (the memory attention's, through the scores on every device);
  // values narrower than the keys (the memory attention's 64 against 256, mixed
  // before their projection), also in batches and with bf16 products.
  for (const Attention a : {Attention{45, 300, 3, 96, 1, true, false, false, false},
                            Attention{7, 256, 8, 32, 1, false, false, false, false},
                            Attention{256, 7, 8, 16, 1, false, false, false, false},
                            Attention{7, 256, 8, 2, 1, false, false, false, false},
                            Attention{256, 7, 8, 2, 1, false, false, false, false},
                            Attention{9, 70, 3, 6, 1, false, false, false, false},
                            Attention{70, 1100, 2, 40, 1, true, false, false, false},
                            Attention{7, 64, 8, 16, 3, false, false, true, false},
                            Attention{64, 7, 8, 16, 3, false, true, false, false},
                            Attention{9, 70, 4, 16, 3, false, false, false, false},
                            Attention{45, 300, 3, 96, 1, true, false, false, true},
                            Attention{70, 300, 2, 256, 1, true, false, false, false},
                            Attention{9, 70, 1, 256, 3, false, false, false, false},
                            Attention{70, 300, 1, 256, 1, false, false, false, false, 64},
                            Attention{9, 70, 2, 32, 3, false, false, false, false, 8},
                            Attention{45, 300, 1, 96, 1, false, false, false, true, 32}}) {
    const int64_t width = a.heads * a.head_dim, values = a.heads * (a.value_dim > 0 ? a.value_dim : a.head_dim);
    cases.push_back(
        {"attention",
         std::to_string(a.nq) + " queries, " + std::to_string(a.nk) + " keys, " + std::to_string(a.heads) + "x" +
             std::to_string(a.head_dim) + (a.interleaved ? ", interleaved qkv" : "") +
             (a.batches > 1 ? ", " + std::to_string(a.batches) + " batches" : "") + (a.shared_q ? ", shared q" : "") +
             (a.shared_kv ? ", shared k v" : "") + (a.bf16_products ? ", bf16 products" : "") +
             (a.value_dim > 0 ? ", values of " + std::to_string(a.value_dim) : ""),
         a.bf16_products ? kBf16AttentionTolerance : kAttentionTolerance, a.bf16_products,
         [a, width, values](Backend& backend) {
           const int64_t q_batches = a.shared_q ? 1 : a.batches, kv_batches = a.shared_kv ? 1 : a.batches;
           // Interleaved: one tensor [nk, 3 * width], q its first nq rows.
           const Tensor q = random_tensor({q_batches * (a.interleaved ? a.nk : a.nq), (a.interleaved ? 3 : 1) * width},
                                          45, 2.0f);
           const Tensor k = a.interleaved ? q : random_tensor({kv_batches * a.nk, width}, 46, 2.0f);
           const Tensor v = a.interleaved ? q : random_tensor({kv_batches * a.nk, values}, 47);
           const int64_t ld = a.interleaved ? 3 * width : width;
           AttentionOperands operands;
           operands.nq = a.nq;
           operands.nk = a.nk;
           operands.heads = a.heads;
           operands.head_dim = a.head_dim;
           operands.value_dim = a.value_dim;
           operands.q = input_of(backend, q);
           operands.k = a.interleaved ? operands.q : input_of(backend, k);
           operands.v = a.interleaved ? operands.q : input_of(backend, v);
           operands.out = backend.tensor({a.batches * a.nq, values});
           operands.k_offset = a.interleaved ? width : 0;
           operands.v_offset = a.interleaved ? 2 * width : 0;
           operands.ldq = operands.ldk = ld;
           operands.ldv = a.interleaved ? ld : values;
           operands.ldo = values;
           operands.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(a.head_dim)));
           operands.bf16_products = a.bf16_products;
           operands.batches = a.batches;
           operands.q_batch_stride = a.shared_q ? 0 : a.nq * width;
           operands.k_batch_stride = a.shared_kv ? 0 : a.nk * width;
           operands.v_batch_stride = a.shared_kv ? 0 : a.nk * values;
           operands.o_batch_stride = a.nq * values;
           run_once(backend, [&] { backend.attention(operands); });
           Tensor expected({a.batches * a.nq, values});
           for (int64_t b = 0; b < a.batches; ++b) {
             ref::attention({a.nq, a.nk, a.heads, a.head_dim, q.data() + b * operands.q_batch_stride,
                             k.data() + operands.k_offset + b * operands.k_batch_stride,
                             v.data() + operands.v_offset + b * operands.v_batch_stride, ld, ld, operands.ldv,
                             operands.scale, a.value_dim},
                            expected.data() + b * operands.o_batch_stride, values);
           }
           return Outcome{backend.download(operands.out), expected};
         }});
  }
  // Every backend takes values as wide as the keys; one that says it takes
  // narrower ones computes them, and one that does not refuses them.
  cases.push_back({"supports_attention", "9 queries, 70 keys, 1x32, values of 32 and of 8", kAttentionTolerance,
                   false, [](Backend& backend) {
                     const Tensor q = random_tensor({9, 32}, 45, 2.0f), k = random_tensor({70, 32}, 46, 2.0f),
                                  v = random_tensor({70, 8}, 47);
                     AttentionOperands operands;
                     operands.nq = 9;
                     operands.nk = 70;
                     operands.head_dim = 32;
                     EXPECT_TRUE(backend.supports_attention(operands));
                     operands.value_dim = 8;
                     operands.q = input_of(backend, q);
                     operands.k = input_of(backend, k);
                     operands.v = input_of(backend, v);
                     operands.out = backend.tensor({9, 8});
                     operands.ldq = operands.ldk = 32;
                     operands.ldv = operands.ldo = 8;
                     operands.scale = static_cast<float>(1.0 / std::sqrt(32.0));
                     Tensor expected({9, 8});
                     ref::attention({9, 70, 1, 32, q.data(), k.data(), v.data(), 32, 32, 8, operands.scale, 8},
                                    expected.data(), 8);
                     if (!backend.supports_attention(operands)) {
                       EXPECT_THROW(run_once(backend, [&] { backend.attention(operands); }), Error);
                       return Outcome{expected, expected};
                     }
                     run_once(backend, [&] { backend.attention(operands); });
                     return Outcome{backend.download(operands.out), expected};
                   }});
}

void add_max_pool_cases(std::vector<OpCase>& cases) {
  struct Pool {
    Shape shape;
    int64_t channel_offset, channels;
  };
  // Odd heights and widths; the q of Tiny's first pooling block (96 of 288).
  for (const Pool& p : {Pool{{2, 6, 8, 10}, 3, 5}, Pool{{1, 7, 9, 10}, 0, 10}, Pool{{1, 16, 16, 288}, 0, 96}}) {
    cases.push_back({"max_pool2x2",
                     shape_to_string(p.shape) + " channels " + std::to_string(p.channel_offset) + "+" +
                         std::to_string(p.channels),
                     0.0, false, [p](Backend& backend) {
                       const Tensor x = random_tensor(p.shape, 61);
                       const int64_t n = p.shape[0], height = p.shape[1], width = p.shape[2], total = p.shape[3];
                       const DeviceTensor dx = input_of(backend, x);
                       DeviceTensor y = backend.tensor({n, height / 2, width / 2, p.channels});
                       run_once(backend, [&] { backend.max_pool2x2(dx, p.channel_offset, p.channels, y); });
                       Tensor expected({n, height / 2, width / 2, p.channels});
                       for (int64_t i = 0; i < expected.numel(); ++i) {
                         const int64_t c = i % p.channels, ox = i / p.channels % (width / 2);
                         const int64_t oy = i / p.channels / (width / 2) % (height / 2);
                         const int64_t b = i / p.channels / (width / 2) / (height / 2);
                         float largest = -INFINITY;
                         for (int64_t j = 0; j < 4; ++j) {
                           const int64_t pixel = (b * height + 2 * oy + j / 2) * width + 2 * ox + j % 2;
                           largest = std::max(largest, x[pixel * total + p.channel_offset + c]);
                         }
                         expected[i] = largest;
                       }
                       return Outcome{backend.download(y), expected};
                     }});
  }
}

// ---- Elementwise and layout ops (the sums are one rounded add, as exact as the reference) ----

void add_elementwise_cases(std::vector<OpCase>& cases) {
  // The FPN's top-down path at 16x16 -> 32x32 with 256 channels.
  for (const Shape& coarse : {Shape{5, 7, 6}, Shape{16, 16, 256}}) {
    cases.push_back({"add_upsampled_nearest2x", shape_to_string(coarse), 0.0, false, [coarse](Backend& backend) {
                       const int64_t height = coarse[0], width = coarse[1], channels = coarse[2];
                       const Tensor small = random_tensor(coarse, 81);
                       const Tensor x = random_tensor({2 * height, 2 * width, channels}, 82);
                       const DeviceTensor dsmall = input_of(backend, small);
                       DeviceTensor dx = input_of(backend, x);
                       run_once(backend, [&] { backend.add_upsampled_nearest2x(dx, dsmall); });
                       Tensor expected = x.clone();
                       for (int64_t i = 0; i < expected.numel(); ++i) {
                         const int64_t c = i % channels, fx = i / channels % (2 * width);
                         const int64_t fy = i / channels / (2 * width);
                         expected[i] += small[((fy / 2) * width + fx / 2) * channels + c];
                       }
                       return Outcome{backend.download(dx), expected};
                     }});
  }
  for (const Shape& shape : {Shape{5, 3, 7}, Shape{32, 32, 256}}) {
    cases.push_back({"add_channel_vector", shape_to_string(shape), 0.0, false, [shape](Backend& backend) {
                       const Tensor x = random_tensor(shape, 83), vector = random_tensor({shape.back()}, 84);
                       DeviceTensor dx = input_of(backend, x);
                       const DeviceTensor dv = backend.constant(vector);
                       run_once(backend, [&] { backend.add_channel_vector(dx, dv); });
                       Tensor expected = x.clone();
                       for (int64_t i = 0; i < expected.numel(); ++i) expected[i] += vector[i % shape.back()];
                       return Outcome{backend.download(dx), expected};
                     }});
  }
  struct Sum {
    Shape a, b;
    bool into_a;  // y is a
  };
  // b as large as a, or one prompt's tensor added to each of a batch's.
  for (const Sum& s :
       {Sum{{7, 33}, {7, 33}, false}, Sum{{3, 4, 20}, {4, 20}, false}, Sum{{4, 7, 256}, {7, 256}, true}}) {
    cases.push_back({"add", shape_to_string(s.a) + " + " + shape_to_string(s.b) + (s.into_a ? " in place" : ""), 0.0,
                     false, [s](Backend& backend) {
                       const Tensor a = random_tensor(s.a, 85), b = random_tensor(s.b, 86);
                       DeviceTensor da = input_of(backend, a);
                       const DeviceTensor db = input_of(backend, b);
                       DeviceTensor y = s.into_a ? da : backend.tensor(s.a);
                       run_once(backend, [&] { backend.add(da, db, y); });
                       Tensor expected = a.clone();
                       for (int64_t i = 0; i < expected.numel(); ++i) expected[i] += b[i % b.numel()];
                       return Outcome{backend.download(y), expected};
                     }});
  }
  // Activations over [-10, 10] (both tails) and on a decoder-sized map.
  for (const bool sigmoid : {false, true}) {
    for (const int64_t n : {int64_t{2001}, int64_t{64 * 64 * 4}}) {
      cases.push_back({sigmoid ? "sigmoid" : "gelu", std::to_string(n) + " values", 1e-6, false,
                       [sigmoid, n](Backend& backend) {
                         Tensor x({n});
                         for (int64_t i = 0; i < n; ++i) {
                           x[i] = -10.0f + 20.0f * static_cast<float>(i) / static_cast<float>(n - 1);
                         }
                         DeviceTensor dx = input_of(backend, x);
                         run_once(backend, [&] { sigmoid ? backend.sigmoid(dx) : backend.gelu(dx); });
                         Tensor expected({n});
                         for (int64_t i = 0; i < n; ++i) {
                           expected[i] = static_cast<float>(sigmoid ? ref::sigmoid(x[i]) : ref::gelu(x[i]));
                         }
                         return Outcome{backend.download(dx), expected};
                       }});
    }
  }
}

void add_layout_cases(std::vector<OpCase>& cases) {
  for (const Shape& shape : {Shape{1000}, Shape{3, 5, 7}}) {
    cases.push_back({"copy", shape_to_string(shape), 0.0, false, [shape](Backend& backend) {
                       const Tensor x = random_tensor(shape, 87);
                       const DeviceTensor dx = input_of(backend, x);
                       DeviceTensor y = backend.tensor({x.numel()});
                       run_once(backend, [&] { backend.copy(dx, y); });
                       return Outcome{backend.download(y), x.reshaped({x.numel()})};
                     }});
  }
  for (const Shape& shape : {Shape{6, 9, 5}, Shape{64, 64, 32}}) {
    cases.push_back({"hwc_to_nchw", shape_to_string(shape), 0.0, false, [shape](Backend& backend) {
                       const Tensor x = random_tensor(shape, 91);
                       const int64_t height = shape[0], width = shape[1], channels = shape[2];
                       const DeviceTensor dx = input_of(backend, x);
                       DeviceTensor y = backend.tensor({1, channels, height, width});
                       run_once(backend, [&] { backend.hwc_to_nchw(dx, y); });
                       Tensor expected({1, channels, height, width});
                       for (int64_t i = 0; i < x.numel(); ++i) {
                         const int64_t c = i % channels, px = i / channels % width, py = i / channels / width;
                         expected[(c * height + py) * width + px] = x[i];
                       }
                       return Outcome{backend.download(y), expected};
                     }});
  }
  struct Elements {
    int64_t x_size, x_offset, y_size, y_offset, count;
  };
  for (const Elements e : {Elements{50, 7, 40, 3, 20}, Elements{256, 0, 256, 0, 256}}) {
    cases.push_back({"copy_elements",
                     std::to_string(e.count) + " of " + std::to_string(e.x_size) + " at " + std::to_string(e.x_offset) +
                         " to " + std::to_string(e.y_offset) + " of " + std::to_string(e.y_size),
                     0.0, false, [e](Backend& backend) {
                       const Tensor x = random_tensor({e.x_size}, 92), before = random_tensor({e.y_size}, 93);
                       const DeviceTensor dx = input_of(backend, x);
                       DeviceTensor y = input_of(backend, before);
                       run_once(backend, [&] { backend.copy_elements(dx, e.x_offset, y, e.y_offset, e.count); });
                       Tensor expected = before.clone();
                       std::copy_n(x.data() + e.x_offset, e.count, expected.data() + e.y_offset);
                       return Outcome{backend.download(y), expected};
                     }});
  }
  struct Rows {
    int64_t x_size, x_offset, x_stride, y_size, y_offset, y_stride, width, rows;
  };
  // Strided rows out of and into larger tensors; token 1 of each of 3 prompts (7 tokens of 256).
  for (const Rows r : {Rows{35, 2, 7, 20, 1, 4, 3, 5}, Rows{3 * 7 * 256, 256, 7 * 256, 3 * 256, 0, 256, 256, 3}}) {
    cases.push_back({"copy_rows",
                     std::to_string(r.rows) + " rows of " + std::to_string(r.width) + ", strides " +
                         std::to_string(r.x_stride) + " -> " + std::to_string(r.y_stride),
                     0.0, false, [r](Backend& backend) {
                       const Tensor x = random_tensor({r.x_size}, 94), before = random_tensor({r.y_size}, 95);
                       const DeviceTensor dx = input_of(backend, x);
                       DeviceTensor y = input_of(backend, before);
                       run_once(backend, [&] {
                         backend.copy_rows(dx, r.x_offset, r.x_stride, y, r.y_offset, r.y_stride, r.width, r.rows);
                       });
                       Tensor expected = before.clone();
                       for (int64_t row = 0; row < r.rows; ++row) {
                         std::copy_n(x.data() + r.x_offset + row * r.x_stride, r.width,
                                     expected.data() + r.y_offset + row * r.y_stride);
                       }
                       return Outcome{backend.download(y), expected};
                     }});
  }
}

// ---- The mask decoder's products ----

void add_decoder_product_cases(std::vector<OpCase>& cases) {
  struct Matmul {
    int64_t rows, k, n, batches;
  };
  // 300 outputs (tiles cut), 3 batches, the hypernetwork's 4 masks of 32
  // against a 64x64 map, for 2 prompts.
  for (const Matmul m : {Matmul{4, 12, 300, 1}, Matmul{70, 12, 9, 3}, Matmul{4, 32, 64 * 64, 2}}) {
    cases.push_back({"matmul_transposed",
                     dims({m.rows, m.k}) + " x " + dims({m.n, m.k}) + "^T, " + std::to_string(m.batches) + " batches",
                     fp32_tolerance(m.k), false, [m](Backend& backend) {
                       const Tensor x = random_tensor({m.batches * m.rows, m.k}, 101);
                       const Tensor w = random_tensor({m.batches * m.n, m.k}, 102);
                       const DeviceTensor dx = input_of(backend, x), dw = input_of(backend, w);
                       DeviceTensor y = backend.tensor({m.batches * m.rows, m.n});
                       run_once(backend, [&] { backend.matmul_transposed(dx, dw, y, m.batches); });
                       Tensor expected({m.batches * m.rows, m.n});
                       for (int64_t i = 0; i < expected.numel(); ++i) {
                         const int64_t row = i / m.n, column = i % m.n, batch = row / m.rows;
                         double sum = 0.0;
                         for (int64_t j = 0; j < m.k; ++j) {
                           sum += static_cast<double>(x[row * m.k + j]) * w[(batch * m.n + column) * m.k + j];
                         }
                         expected[i] = static_cast<float>(sum);
                       }
                       return Outcome{backend.download(y), expected};
                     }});
  }
  struct Upscale {
    int64_t maps, height, width, in_channels, out_channels;
    bool add;
  };
  // Within one 256x128 tile of the device kernel and across tiles; the
  // decoder's first upscaling (256 -> 64 channels) at 16x16; 3 stacked maps
  // (a batch's), each with the same addend.
  for (const Upscale u : {Upscale{1, 3, 5, 12, 7, false}, Upscale{1, 3, 5, 12, 7, true},
                          Upscale{1, 17, 19, 12, 36, true}, Upscale{1, 16, 16, 256, 64, true},
                          Upscale{3, 3, 5, 12, 7, true}}) {
    cases.push_back({"conv_transpose2x2",
                     std::to_string(u.maps) + " x " + dims({u.height, u.width, u.in_channels}) + " -> " +
                         std::to_string(u.out_channels) + (u.add ? " + addend" : ""),
                     fp32_tolerance(u.in_channels), false, [u](Backend& backend) {
                       const int64_t height = u.maps * u.height, out_width = 2 * u.width;
                       const Tensor x = random_tensor({height, u.width, u.in_channels}, 111);
                       const Tensor weight = random_tensor({u.in_channels, u.out_channels, 2, 2}, 112, 0.3f);
                       const Tensor bias = random_tensor({u.out_channels}, 113);
                       const Tensor addend = random_tensor({2 * u.height, out_width, u.out_channels}, 114);
                       const DeviceTensor dx = input_of(backend, x), w = backend.constant(weight);
                       const DeviceTensor b = backend.constant(bias);
                       const DeviceTensor dadd = u.add ? input_of(backend, addend) : DeviceTensor();
                       DeviceTensor y = backend.tensor({2 * height, out_width, u.out_channels});
                       run_once(backend, [&] { backend.conv_transpose2x2(dx, w, b, dadd, y); });
                       Tensor expected({2 * height, out_width, u.out_channels});
                       const int64_t map_rows = 2 * u.height;
                       for (int64_t i = 0; i < expected.numel(); ++i) {
                         const int64_t o = i % u.out_channels, ox = i / u.out_channels % out_width;
                         const int64_t oy = i / u.out_channels / out_width;
                         double sum = bias[o];
                         if (u.add) sum += addend[((oy % map_rows) * out_width + ox) * u.out_channels + o];
                         for (int64_t c = 0; c < u.in_channels; ++c) {
                           sum += static_cast<double>(x[((oy / 2) * u.width + ox / 2) * u.in_channels + c]) *
                                  weight[((c * u.out_channels + o) * 2 + oy % 2) * 2 + ox % 2];
                         }
                         expected[i] = static_cast<float>(sum);
                       }
                       return Outcome{backend.download(y), expected};
                     }});
  }
}

// ---- Tensors, transfers, programs and queries ----

void add_tensor_cases(std::vector<OpCase>& cases) {
  const Shape shape{5, 7, 3};
  cases.push_back({"constant", shape_to_string(shape), 0.0, false, [shape](Backend& backend) {
                     const Tensor value = random_tensor(shape, 121);
                     const DeviceTensor c = backend.constant(value);
                     DeviceTensor y = backend.tensor(shape);
                     run_once(backend, [&] { backend.copy(c, y); });
                     return Outcome{backend.download(y), value};
                   }});
  // What one program writes into a persistent tensor outlives other programs'
  // activations (scratch that reuses free memory).
  cases.push_back({"persistent", shape_to_string(shape), 0.0, false, [shape](Backend& backend) {
                     const Tensor value = random_tensor(shape, 122);
                     DeviceTensor state = backend.persistent(shape);
                     {
                       const DeviceTensor source = input_of(backend, value);
                       run_once(backend, [&] { backend.copy(source, state); });
                     }
                     {
                       const DeviceTensor other = input_of(backend, random_tensor(shape, 123));
                       DeviceTensor scratch = backend.tensor(shape);
                       run_once(backend, [&] { backend.copy(other, scratch); });
                     }
                     return Outcome{backend.download(state), value};
                   }});
  cases.push_back({"tensor", shape_to_string(shape), 0.0, false, [shape](Backend& backend) {
                     const Tensor value = random_tensor(shape, 124);
                     DeviceTensor t = backend.tensor(shape);
                     EXPECT_EQ(t.shape(), shape);
                     EXPECT_EQ(t.type(), ElementType::f32);
                     const DeviceTensor source = input_of(backend, value);
                     run_once(backend, [&] { backend.copy(source, t); });
                     return Outcome{backend.download(t), value};
                   }});
  cases.push_back({"tensor", shape_to_string(shape) + " bf16", 0.0, true, [shape](Backend& backend) {
                     const DeviceTensor t = backend.tensor(shape, ElementType::bf16);
                     EXPECT_EQ(t.type(), ElementType::bf16);
                     EXPECT_EQ(t.shape(), shape);
                     return Outcome{};
                   }});
  cases.push_back({"input", shape_to_string(shape), 0.0, false, [shape](Backend& backend) {
                     const Tensor value = random_tensor(shape, 125);
                     const DeviceTensor x = backend.input(value);
                     EXPECT_EQ(x.shape(), shape);
                     return Outcome{backend.download(x), value};
                   }});
  cases.push_back({"write", shape_to_string(shape), 0.0, false, [shape](Backend& backend) {
                     const Tensor value = random_tensor(shape, 126);
                     const DeviceTensor x = input_of(backend, random_tensor(shape, 127));
                     backend.write(x, value);
                     EXPECT_THROW(backend.write(x, Tensor({2})), Error) << "a value of another size";
                     return Outcome{backend.download(x), value};
                   }});
  cases.push_back({"download", "after an op", 0.0, false, [shape](Backend& backend) {
                     const Tensor value = random_tensor(shape, 128);
                     DeviceTensor x = input_of(backend, value);
                     run_once(backend, [&] { backend.add(x, x, x); });
                     Tensor expected = value.clone();
                     for (float& v : expected) v += v;
                     return Outcome{backend.download(x), expected};
                   }});
}

class ForeignProgram final : public Program {
 public:
  ProgramStats stats() const override { return {}; }
};

// A program recorded once and replayed with a new input written into the same
// tensor (a device backend's per-image runs); the CPU records none.
void add_program_cases(std::vector<OpCase>& cases) {
  cases.push_back({"begin_program", "twice", 0.0, false, [](Backend& backend) {
                     if (!backend.records()) {
                       EXPECT_THROW(backend.begin_program(), Error);
                       return Outcome{};
                     }
                     backend.begin_program();
                     EXPECT_THROW(backend.begin_program(), Error) << "a program is already being recorded";
                     EXPECT_NE(backend.end_program(), nullptr);
                     return Outcome{};
                   }});
  cases.push_back({"end_program", "stats of 2 ops", 0.0, false, [](Backend& backend) {
                     if (!backend.records()) {
                       EXPECT_THROW(backend.end_program(), Error);
                       return Outcome{};
                     }
                     EXPECT_THROW(backend.end_program(), Error) << "without begin_program";
                     DeviceTensor x = input_of(backend, random_tensor({64}, 129));
                     backend.begin_program();
                     backend.gelu(x);
                     backend.sigmoid(x);
                     const ProgramStats stats = backend.end_program()->stats();
                     EXPECT_EQ(stats.ops, 2);
                     EXPECT_EQ(stats.ops_on_device, 2);
                     EXPECT_GE(stats.dispatches, 2);
                     return Outcome{};
                   }});
  cases.push_back({"run", "replayed with a new input", 0.0, false, [](Backend& backend) {
                     const Tensor first = random_tensor({6, 10}, 130), second = random_tensor({6, 10}, 131);
                     const Tensor addend = random_tensor({10}, 132);
                     const DeviceTensor x = input_of(backend, first), b = backend.constant(addend);
                     DeviceTensor y = backend.tensor({6, 10});
                     ForeignProgram foreign;
                     EXPECT_THROW(backend.run(foreign), Error) << "a program the backend did not record";
                     if (!backend.records()) return Outcome{};
                     backend.begin_program();
                     backend.add(x, b, y);
                     const std::shared_ptr<Program> program = backend.end_program();
                     backend.run(*program);
                     const Tensor after_first = backend.download(y);
                     backend.write(x, second);
                     backend.run(*program);
                     Tensor actual({2, 6, 10}), expected({2, 6, 10});
                     std::copy(after_first.begin(), after_first.end(), actual.begin());
                     const Tensor after_second = backend.download(y);
                     std::copy(after_second.begin(), after_second.end(), actual.begin() + 60);
                     for (int64_t i = 0; i < 60; ++i) {
                       expected[i] = first[i] + addend[i % 10];
                       expected[60 + i] = second[i] + addend[i % 10];
                     }
                     return Outcome{actual, expected};
                   }});
}

void add_query_cases(std::vector<OpCase>& cases) {
  cases.push_back({"description", "", 0.0, false, [](Backend& backend) {
                     const std::string description = backend.description();
                     EXPECT_TRUE(description == "cpu" || description.starts_with("vulkan: ")) << description;
                     return Outcome{};
                   }});
  cases.push_back({"records", "", 0.0, false, [](Backend& backend) {
                     EXPECT_EQ(backend.records(), backend.description() != "cpu");
                     return Outcome{};
                   }});
  cases.push_back({"ops_called", "3 ops", 0.0, false, [](Backend& backend) {
                     DeviceTensor x = input_of(backend, random_tensor({16}, 133));
                     const int64_t before = backend.ops_called();
                     run_once(backend, [&] {
                       backend.gelu(x);
                       backend.add(x, x, x);
                       backend.sigmoid(x);
                     });
                     EXPECT_EQ(backend.ops_called() - before, 3);
                     return Outcome{};
                   }});
  // Activations' copies between host and device; none on the CPU, whose tensors are host memory.
  cases.push_back({"transfers", "input, write, download, one program", 0.0, false, [](Backend& backend) {
                     const TransferCounts before = backend.transfers();
                     DeviceTensor x = input_of(backend, random_tensor({16}, 134));
                     backend.write(x, random_tensor({16}, 135));
                     run_once(backend, [&] { backend.gelu(x); });
                     backend.download(x);
                     const TransferCounts after = backend.transfers();
                     const int64_t counted = backend.records() ? 1 : 0;
                     EXPECT_EQ(after.uploads - before.uploads, 2 * counted);
                     EXPECT_EQ(after.downloads - before.downloads, counted);
                     EXPECT_EQ(after.submissions - before.submissions, counted);
                     return Outcome{};
                   }});
  cases.push_back({"max_whole_tensor_elements", "", 0.0, false, [](Backend& backend) {
                     // At least the decoder's image embedding (64x64, 256 channels), which ops take whole.
                     EXPECT_GE(backend.max_whole_tensor_elements(), 64 * 64 * 256);
                     return Outcome{};
                   }});
}

// ---- The video memory modules' ops ----

// A RoPE table [period, pairs, 2] of (cos, sin) of random angles.
Tensor rotation_table(int64_t period, int64_t pairs, uint32_t seed) {
  const Tensor angles = random_tensor({period, pairs}, seed, 60.0f);
  Tensor table({period, pairs, 2});
  for (int64_t i = 0; i < angles.numel(); ++i) {
    table[2 * i] = std::cos(angles[i]);
    table[2 * i + 1] = std::sin(angles[i]);
  }
  return table;
}

void add_memory_cases(std::vector<OpCase>& cases) {
  struct Rotation {
    int64_t n, width, rows, period, pairs;
  };
  // Self-attention (rows = period), 2 heads, and the cross-attention's keys:
  // three frames' rows repeating the table, the last rows (object pointers) left as they are.
  for (const Rotation r : {Rotation{16, 32, 16, 16, 16}, Rotation{12, 24, 12, 12, 6},
                           Rotation{3 * 20 + 8, 16, 3 * 20, 20, 8}}) {
    cases.push_back({"rotary_rows",
                     std::to_string(r.rows) + " of " + dims({r.n, r.width}) + ", table " +
                         dims({r.period, r.pairs, 2}),
                     1e-6, false, [r](Backend& backend) {
                       const Tensor x = random_tensor({r.n, r.width}, 91);
                       const Tensor table = rotation_table(r.period, r.pairs, 92);
                       DeviceTensor dx = input_of(backend, x);
                       const DeviceTensor dt = backend.constant(table);
                       run_once(backend, [&] { backend.rotary_rows(dx, r.rows, dt); });
                       return Outcome{backend.download(dx), ref::rotary_rows(x, r.rows, table)};
                     }});
  }
  struct Depthwise {
    int64_t height, width, channels, kernel, padding;
  };
  // The CXBlock's 7x7 (padding 3) on a micro-sized and a non-square map, and a 3x3 without padding.
  for (const Depthwise d : {Depthwise{16, 16, 32, 7, 3}, Depthwise{9, 6, 5, 7, 3}, Depthwise{7, 8, 3, 3, 0}}) {
    cases.push_back({"depthwise_conv2d_hwc",
                     dims({d.height, d.width, d.channels}) + ", " + std::to_string(d.kernel) + "x" +
                         std::to_string(d.kernel) + " padding " + std::to_string(d.padding),
                     fp32_tolerance(d.kernel * d.kernel), false, [d](Backend& backend) {
                       const Tensor x = random_tensor({d.height, d.width, d.channels}, 93);
                       const Tensor weight = random_tensor({d.channels, 1, d.kernel, d.kernel}, 94, 0.3f);
                       const Tensor bias = random_tensor({d.channels}, 95);
                       const DeviceTensor dx = input_of(backend, x), w = backend.constant(weight),
                                          b = backend.constant(bias);
                       DeviceTensor y = backend.tensor({d.height + 2 * d.padding - d.kernel + 1,
                                                        d.width + 2 * d.padding - d.kernel + 1, d.channels});
                       run_once(backend, [&] { backend.depthwise_conv2d_hwc(dx, w, b, d.padding, y); });
                       return Outcome{backend.download(y), ref::depthwise_conv2d_hwc(x, weight, bias, d.padding)};
                     }});
  }
}

const std::vector<OpCase>& op_cases() {
  static const std::vector<OpCase> cases = [] {
    std::vector<OpCase> all;
    add_conv2d_cases(all);
    add_row_table_cases(all);
    add_layer_norm_cases(all);
    add_convert_cases(all);
    add_linear_cases(all);
    add_mlp_cases(all);
    add_windowed_attention_cases(all);
    add_qkv_windowed_attention_cases(all);
    add_attention_cases(all);
    add_max_pool_cases(all);
    add_elementwise_cases(all);
    add_layout_cases(all);
    add_decoder_product_cases(all);
    add_tensor_cases(all);
    add_program_cases(all);
    add_query_cases(all);
    add_memory_cases(all);
    return all;
  }();
  return cases;
}

// The ops with cases, in the table's order: one test each per backend.
std::vector<std::string> covered_methods() {
  std::vector<std::string> names;
  for (const OpCase& c : op_cases()) {
    if (std::find(names.begin(), names.end(), c.op) == names.end()) names.push_back(c.op);
  }
  return names;
}

// The virtual methods that class Backend declares, read from its header: the
// set the table must cover.
std::set<std::string> declared_virtual_methods() {
  std::ifstream file(std::string(SAM2RT_SOURCE_DIR) + "/src/backends/backend.h");
  const std::string header((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  const size_t begin = header.find("class Backend {");
  const size_t end = header.find("\n};", begin);
  if (begin == std::string::npos || end == std::string::npos) return {};
  const std::string body = header.substr(begin, end - begin);
  // "virtual <return type> name(": the name is the last word before the parenthesis.
  const std::regex declaration(R"(virtual\s[^;(]*?(~?\w+)\s*\()");
  std::set<std::string> names;
  for (auto it = std::sregex_iterator(body.begin(), body.end(), declaration); it != std::sregex_iterator(); ++it) {
    const std::string name = (*it)[1];
    if (!name.starts_with("~")) names.insert(name);
  }
  return names;
}

// The CPU backend's half; EveryMethodOfTheInterfaceHasACase runs once.
class BackendOps : public ::testing::TestWithParam<std::string> {};

// A new virtual method in backends/backend.h fails this test until the table
// has a case for it: the table's op names must be exactly the methods the
// header declares (a case for a method that is not there fails too). The names
// come from the header's text, not from a list kept by hand, so the check
// cannot go stale.
TEST_F(BackendOps, EveryMethodOfTheInterfaceHasACase) {
  const std::set<std::string> declared = declared_virtual_methods();
  ASSERT_FALSE(declared.empty()) << "no virtual methods read from backends/backend.h";
  const std::vector<std::string> names = covered_methods();
  const std::set<std::string> covered(names.begin(), names.end());
  for (const std::string& name : declared) EXPECT_TRUE(covered.contains(name)) << "Backend::" << name << " has no case";
  for (const std::string& name : covered) EXPECT_TRUE(declared.contains(name)) << name << " is not a Backend method";
}

// Runs every case of `op` on `backend`. bf16 cases run where `runs_bf16`, and
// must be refused with Error by a backend that computes in fp32 only.
void check_op(Backend& backend, const std::string& op, bool runs_bf16, bool refuses_bf16) {
  int ran = 0, skipped = 0;
  for (const OpCase& c : op_cases()) {
    if (c.op != op) continue;
    if (c.bf16 && !runs_bf16 && !refuses_bf16) {
      ++skipped;
      continue;
    }
    SCOPED_TRACE(c.op + " " + c.arguments);
    ++ran;
    if (c.bf16 && refuses_bf16) {
      try {
        c.run(backend);
        ADD_FAILURE() << "bf16 was not refused";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("bf16"), std::string::npos) << e.what();
      }
      continue;
    }
    const Outcome outcome = c.run(backend);
    ASSERT_EQ(outcome.actual.shape(), outcome.expected.shape());
    EXPECT_LE(largest_error(outcome.actual, outcome.expected), c.tolerance);
  }
  if (ran == 0 && skipped > 0) GTEST_SKIP() << "only bf16 cases, which oneDNN cannot run on this CPU";
  EXPECT_GT(ran, 0) << "no case of " << op << " ran";
}

std::string method_name(const ::testing::TestParamInfo<std::string>& info) { return info.param; }

TEST_P(BackendOps, MatchesTheReference) {
  CpuBackend backend;
  if (!bf16_matmul_supported()) std::cout << "bf16 cases skipped: oneDNN cannot run bfloat16 on this CPU\n";
  check_op(backend, GetParam(), bf16_matmul_supported(), false);
}

INSTANTIATE_TEST_SUITE_P(, BackendOps, ::testing::ValuesIn(covered_methods()), method_name);

#ifdef SAM2RT_VULKAN
class VulkanBackendOps : public VulkanBackendTest, public ::testing::WithParamInterface<std::string> {};

// Why there is no Vulkan device to test ("" when there is one), asked once.
const std::string& missing_vulkan_device() {
  static const std::string why = [] {
    try {
      vulkan_device_description(0);
      return std::string();
    } catch (const Error& e) {
      return std::string(e.what());
    }
  }();
  return why;
}

TEST_P(VulkanBackendOps, MatchesTheReference) {
  if (!missing_vulkan_device().empty()) GTEST_SKIP() << missing_vulkan_device();
  const std::shared_ptr<VulkanBackend> vulkan = backend();
  check_op(*vulkan, GetParam(), false, true);
}
#else
class VulkanBackendOps : public ::testing::TestWithParam<std::string> {};

TEST_P(VulkanBackendOps, MatchesTheReference) { GTEST_SKIP() << "built without Vulkan"; }
#endif

INSTANTIATE_TEST_SUITE_P(, VulkanBackendOps, ::testing::ValuesIn(covered_methods()), method_name);

}  // namespace
}  // namespace sam2rt::testing
