#include "kernels/conv2d.h"

#include <omp.h>

#include <algorithm>

#include "core/error.h"
#include "kernels/gemm.h"
#include "kernels/linear.h"

namespace sam2rt {

namespace {

int64_t conv_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t padding) {
  return (in + 2 * padding - kernel) / stride + 1;
}

}  // namespace

Tensor conv2d_to_hwc(const Tensor& input, const Tensor& weight, const Tensor& bias, int64_t stride,
                     int64_t padding, BufferPool* pool) {
  if (input.rank() != 4 || input.dim(0) != 1 || weight.rank() != 4 || weight.dim(1) != input.dim(1)) {
    throw Error("conv2d: input " + shape_to_string(input.shape()) + " does not match weight " +
                shape_to_string(weight.shape()));
  }
  if (stride < 1 || padding < 0) throw Error("conv2d: stride must be >= 1 and padding >= 0");
  const int64_t cin = input.dim(1), h = input.dim(2), w = input.dim(3);
  const int64_t cout = weight.dim(0), kh = weight.dim(2), kw = weight.dim(3);
  const int64_t oh = conv_output_size(h, kh, stride, padding);
  const int64_t ow = conv_output_size(w, kw, stride, padding);
  if (oh < 1 || ow < 1) throw Error("conv2d: input " + shape_to_string(input.shape()) + " is smaller than the kernel");
  if (!bias.empty() && bias.numel() != cout) throw Error("conv2d: bias size does not match weight");

  // Each thread takes one output row at a time: its receptive fields (im2col,
  // in the weight's (cin, ky, kx) order) into the thread's scratch, which stays
  // in cache for the GEMM of that row onto its bias. Writing every patch
  // first (Hiera's patch embed: 65536 x 147 floats, 38 MB) and filling the
  // bias on one thread cost more than the GEMM itself.
  const int64_t patch = cin * kh * kw;
  const int max_threads = omp_get_max_threads();
  Tensor scratch = pool ? pool->tensor({max_threads, ow * patch}) : Tensor({max_threads, ow * patch});
  Tensor out = pool ? pool->tensor({oh, ow, cout}) : Tensor({oh, ow, cout});
  const float* src = input.data();
#pragma omp parallel
  {
    float* patches = scratch.data() + omp_get_thread_num() * ow * patch;
#pragma omp for schedule(dynamic, 1)
    for (int64_t oy = 0; oy < oh; ++oy) {
      for (int64_t ox = 0; ox < ow; ++ox) {
        float* row = patches + ox * patch;
        const int64_t ix0 = ox * stride - padding;
        const bool columns_inside = ix0 >= 0 && ix0 + kw <= w;
        for (int64_t c = 0; c < cin; ++c) {
          for (int64_t ky = 0; ky < kh; ++ky, row += kw) {
            const int64_t iy = oy * stride - padding + ky;
            if (iy < 0 || iy >= h) {
              std::fill_n(row, kw, 0.0f);
            } else if (columns_inside) {
              std::copy_n(src + (c * h + iy) * w + ix0, kw, row);
            } else {
              for (int64_t kx = 0; kx < kw; ++kx) {
                const int64_t ix = ix0 + kx;
                row[kx] = ix >= 0 && ix < w ? src[(c * h + iy) * w + ix] : 0.0f;
              }
            }
          }
        }
      }
      float* out_row = out.data() + oy * ow * cout;
      if (!bias.empty()) {
        for (int64_t ox = 0; ox < ow; ++ox) std::copy(bias.begin(), bias.end(), out_row + ox * cout);
      }
      // Within the parallel region oneDNN runs the GEMM on this thread alone.
      gemm({.m = ow, .n = cout, .k = patch, .a = patches, .lda = patch, .b = weight.data(), .ldb = patch,
            .b_transposed = true, .c = out_row, .ldc = cout, .accumulate = !bias.empty()});
    }
  }
  return out;
}

Tensor conv1x1_hwc(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  if (weight.rank() != 4 || weight.dim(2) != 1 || weight.dim(3) != 1) {
    throw Error("conv1x1: weight " + shape_to_string(weight.shape()) + " is not a 1x1 kernel");
  }
  return linear(x, weight.reshaped({weight.dim(0), weight.dim(1)}), bias);
}

}  // namespace sam2rt
