#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/bilinear_resize.h"
#include "kernels/conv_transpose.h"
#include "kernels/decoder_rows.h"
#include "kernels/layout.h"
#include "kernels/norm.h"
#include "kernels/decoder/mask_products.h"
#include "kernels/patch_conv.h"
#include "kernels/decoder/small_rows_linear.h"
#include "kernels/decoder/thread_scratch.h"
#include "simd_levels.h"

namespace sam2rt {
namespace {

using testing::same_bits;

Tensor random_tensor(Shape shape, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  Tensor t(std::move(shape));
  for (float& v : t) v = dist(rng);
  return t;
}

// Largest |a - b| relative to max(1, |b|); shapes must agree.
double max_relative_error(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  if (a.shape() != b.shape()) return INFINITY;
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double d = std::fabs(static_cast<double>(a[i]) - b[i]) / std::max(1.0, std::fabs(static_cast<double>(b[i])));
    if (std::isnan(d)) return INFINITY;
    worst = std::max(worst, d);
  }
  return worst;
}

// Every row count the kernel takes (register blocks of 1..8 rows for AVX-512,
// 1..2 for AVX2), output widths with a partial block, strided rows; against the
// plain sum over the unpacked PyTorch weight, on each path the CPU has. The
// paths sum in the same order: where both run, they agree bit for bit.
TEST(DecoderKernels, SmallRowsLinearMatchesReference) {
  if (!small_rows_linear_applies(1)) GTEST_SKIP() << "needs AVX2";
  const int64_t in = 37, ldx = in + 3;
  for (const int64_t columns : {int64_t{45}, int64_t{7}, int64_t{64}}) {
    const int64_t ldy = columns + 5;
    const Tensor weight = random_tensor({columns, in}, 41), bias = random_tensor({columns}, 42);
    const Tensor packed = pack_small_rows_weight(weight);
    for (const int64_t rows : {1, 2, 5, 8, 9, 16, 17, 31, 32, 33, 64}) {
      ASSERT_TRUE(small_rows_linear_applies(rows));
      const Tensor x = random_tensor({rows, ldx}, 43);
      Tensor got = Tensor::filled({rows, ldy}, 9.0f), want = got.clone(), via_reference = got.clone();
      SmallRowsLinearArgs args{.rows = rows, .in = in, .columns = columns, .x = x.data(), .ldx = ldx,
                               .packed = packed.data(), .bias = bias.data(), .y = got.data(), .ldy = ldy};
      small_rows_linear(args, SimdLevel::avx2);
      if (best_simd_level() >= SimdLevel::avx512) {
        Tensor wide = Tensor::filled({rows, ldy}, 9.0f);
        args.y = wide.data();
        small_rows_linear(args, SimdLevel::avx512);
        EXPECT_TRUE(same_bits(wide, got)) << rows << " rows";
      }
      args.y = via_reference.data();
      small_rows_linear_reference(args);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < columns; ++j) {
          double sum = bias[j];
          for (int64_t k = 0; k < in; ++k) sum += static_cast<double>(x[r * ldx + k]) * weight[j * in + k];
          want[r * ldy + j] = static_cast<float>(sum);
        }
      EXPECT_LE(max_relative_error(got, want), 1e-5) << rows << " rows, " << columns << " columns";
      EXPECT_LE(max_relative_error(via_reference, want), 1e-6) << rows << " rows, " << columns << " columns";
      for (int64_t r = 0; r < rows; ++r) EXPECT_EQ(got[r * ldy + columns], 9.0f);
    }
  }
  EXPECT_FALSE(small_rows_linear_applies(65));
}

// SAM 2.1's shapes (32 channels, 128 input pixels a row, 3 or 4 masks: the
// fused path on AVX-512), fewer masks, and shapes only the unfused steps take
// (other widths and channel counts), with values reaching GELU's tails, both
// paths against the plain loops; the pixels of out past each row untouched.
TEST(DecoderKernels, UpscaledMaskProductsMatchReference) {
  struct Case {
    int64_t w, cout, masks;
  };
  for (const Case c : {Case{128, 32, 4}, Case{128, 32, 3}, Case{16, 32, 1}, Case{6, 32, 4}, Case{16, 24, 2},
                       Case{16, 32, 5}}) {
    const int64_t out_w = 2 * c.w, ldo = 2 * out_w + 5, ld_taps = c.w + 3;
    Tensor taps = random_tensor({4 * c.cout, ld_taps}, 61);
    for (int64_t i = 0; i < taps.numel(); i += 7) taps[i] *= 12.0f;
    const Tensor bias = random_tensor({c.cout}, 62), skip = random_tensor({4 * c.cout, c.w}, 63);
    const Tensor hyper = random_tensor({c.masks, c.cout}, 64);
    std::vector<float> scratch(static_cast<size_t>(c.w));
    Tensor fused = Tensor::filled({c.masks, ldo}, 5.0f), unfused = fused.clone(), want = fused.clone();
    UpscaledMaskProductsArgs args{.taps = taps.data(), .ld_taps = ld_taps, .w = c.w, .cout = c.cout,
                                  .bias = bias.data(), .skip = skip.data(), .hyper = hyper.data(), .masks = c.masks,
                                  .out = fused.data(), .ldo = ldo, .scratch = scratch.data()};
    upscaled_mask_products(args);
    args.out = unfused.data();
    upscaled_mask_products_unfused(args);
    args.out = want.data();
    upscaled_mask_products_reference(args);
    // Each output a sum of cout products: float roundings and GELU's 2.5e-7 * max(1, |x|) each.
    const std::string shape = std::to_string(c.w) + " wide, " + std::to_string(c.cout) + " channels, " +
                              std::to_string(c.masks) + " masks";
    EXPECT_LE(max_relative_error(fused, want), 1e-5) << shape;
    EXPECT_LE(max_relative_error(unfused, want), 1e-5) << shape;
    for (int64_t m = 0; m < c.masks; ++m) {
      EXPECT_EQ(fused[m * ldo + 2 * out_w], 5.0f) << shape;
      EXPECT_EQ(unfused[m * ldo + 2 * out_w], 5.0f) << shape;
    }
  }
}

// Output pixel (2i + dy, 2j + dx) of channel c lands in tap row (dy * 2 + dx) * C + c of grid row i.
TEST(DecoderKernels, NchwAs2x2TapsPlacesEachPixel) {
  const int64_t c = 3, h = 2, w = 5;
  const Tensor nchw = random_tensor({1, c, 2 * h, 2 * w}, 65);
  Tensor taps({h, 4 * c, w});
  nchw_to_2x2_taps_into(nchw, taps);
  for (int64_t ch = 0; ch < c; ++ch)
    for (int64_t y = 0; y < 2 * h; ++y)
      for (int64_t x = 0; x < 2 * w; ++x) {
        const int64_t t = (y % 2 * 2 + x % 2) * c + ch;
        EXPECT_EQ(taps[((y / 2) * 4 * c + t) * w + x / 2], nchw[(ch * 2 * h + y) * 2 * w + x]);
      }
  Tensor wrong({h, 4 * c, w - 1});
  EXPECT_THROW(nchw_to_2x2_taps_into(nchw, wrong), Error);
}

TEST(DecoderKernels, ConvTranspose2x2MatchesReference) {
  for (bool with_bias : {true, false}) {
    const Tensor x = random_tensor({2, 12, 5, 7}, 1);
    const Tensor w = random_tensor({12, 6, 2, 2}, 2);
    const Tensor b = with_bias ? random_tensor({6}, 3) : Tensor();
    const Tensor fast = conv_transpose_2x2_stride2(x, w, b);
    EXPECT_EQ(fast.shape(), (Shape{2, 6, 10, 14}));
    EXPECT_LE(max_relative_error(fast, conv_transpose_2x2_stride2_reference(x, w, b)), 1e-5);
  }
}

TEST(DecoderKernels, ConvTranspose2x2PlacesEachTap) {
  // One input pixel, one channel: the output 2x2 block is the kernel itself plus the bias.
  Tensor x = Tensor::filled({1, 1, 1, 1}, 1.0f);
  Tensor w({1, 1, 2, 2});
  for (int i = 0; i < 4; ++i) w[i] = static_cast<float>(i + 1);
  const Tensor y = conv_transpose_2x2_stride2(x, w, Tensor::filled({1}, 10.0f));
  EXPECT_EQ(y[0], 11.0f);
  EXPECT_EQ(y[1], 12.0f);
  EXPECT_EQ(y[2], 13.0f);
  EXPECT_EQ(y[3], 14.0f);
}

// Row (dy*2+dx)*Cout+o of the tap rows holds weight[c, o, dy, dx] in column c.
TEST(DecoderKernels, ConvTranspose2x2TapRowsHoldEachWeight) {
  const int64_t cin = 5, cout = 3;
  const Tensor weight = random_tensor({cin, cout, 2, 2}, 8);
  const Tensor rows = pack_conv_transpose_2x2_tap_rows(weight);
  ASSERT_EQ(rows.shape(), (Shape{4 * cout, cin}));
  for (int64_t c = 0; c < cin; ++c)
    for (int64_t o = 0; o < cout; ++o)
      for (int64_t tap = 0; tap < 4; ++tap) {
        EXPECT_EQ(rows[(tap * cout + o) * cin + c], weight[(c * cout + o) * 4 + tap]);
      }
  EXPECT_THROW(pack_conv_transpose_2x2_tap_rows(random_tensor({cin, cout, 3, 3}, 9)), Error);
}

TEST(DecoderKernels, ConvTranspose2x2ChannelsLastBandsMatchReference) {
  // A 5 x 7 map with 12 channels, converted in bands of 2, 2 and 1 input rows.
  const int64_t h = 5, w = 7, cin = 12, cout = 6;
  const Tensor x = random_tensor({1, cin, h, w}, 4);
  const Tensor weight = random_tensor({cin, cout, 2, 2}, 5);
  const Tensor bias = random_tensor({cout}, 6);
  const Tensor want = conv_transpose_2x2_stride2_reference(x, weight, bias);  // [1, cout, 2h, 2w]
  const Tensor taps = pack_conv_transpose_2x2_taps(weight);
  std::vector<float> x_hwc(static_cast<size_t>(h * w * cin));
  for (int64_t c = 0; c < cin; ++c)
    for (int64_t p = 0; p < h * w; ++p) x_hwc[static_cast<size_t>(p * cin + c)] = x[c * h * w + p];
  std::vector<float> out(static_cast<size_t>(4 * h * w * cout)), scratch(static_cast<size_t>(2 * w * 4 * cout));
  for (int64_t i0 = 0; i0 < h; i0 += 2) {
    const int64_t rows = std::min<int64_t>(2, h - i0);
    conv_transpose_2x2_stride2_hwc(x_hwc.data() + i0 * w * cin, rows, w, cin, taps, bias,
                                   out.data() + 2 * i0 * 2 * w * cout, scratch.data());
  }
  double worst = 0;
  for (int64_t o = 0; o < cout; ++o)
    for (int64_t p = 0; p < 4 * h * w; ++p) {
      const double d = std::fabs(static_cast<double>(out[static_cast<size_t>(p * cout + o)]) - want[o * 4 * h * w + p]);
      worst = std::max(worst, d / std::max(1.0, std::fabs(static_cast<double>(want[o * 4 * h * w + p]))));
    }
  EXPECT_LE(worst, 1e-5);
  // A skip connection added in the same pass: (tap + bias) + add, as two passes round.
  const Tensor add = random_tensor({4 * h * w, cout}, 7);
  std::vector<float> with_add(out.size());
  for (int64_t i0 = 0; i0 < h; i0 += 2) {
    const int64_t rows = std::min<int64_t>(2, h - i0), first = 2 * i0 * 2 * w * cout;
    conv_transpose_2x2_stride2_hwc(x_hwc.data() + i0 * w * cin, rows, w, cin, taps, bias, with_add.data() + first,
                                   scratch.data(), add.data() + first);
  }
  for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(with_add[i], out[i] + add[static_cast<int64_t>(i)]) << i;
  EXPECT_THROW(conv_transpose_2x2_stride2_hwc(x_hwc.data(), 1, w, cin + 1, taps, bias, out.data(), scratch.data()),
               Error);
}

TEST(DecoderKernels, AddLayerNormRowsMatchesLayerNormOfTheSum) {
  for (int64_t c : {64, 256, 7}) {
    const Tensor x = random_tensor({9, c}, 7, 3.0f), y = random_tensor({9, c}, 8);
    const Tensor weight = random_tensor({c}, 9), bias = random_tensor({c}, 10);
    Tensor sum({9, c});
    for (int64_t i = 0; i < sum.numel(); ++i) sum[i] = x[i] + y[i];
    const Tensor want = layer_norm(sum, weight, bias, 1e-5f);
    Tensor fused = x.clone();
    add_layer_norm_rows(fused.data(), y.data(), 9, c, weight.data(), bias.data(), 1e-5f);
    EXPECT_LE(max_relative_error(fused, want), 1e-6) << c << " channels";
    Tensor plain = sum.clone();
    add_layer_norm_rows(plain.data(), nullptr, 9, c, weight.data(), bias.data(), 1e-5f);
    EXPECT_LE(max_relative_error(plain, want), 1e-6) << c << " channels";
  }
}

TEST(DecoderKernels, AddRowsAddsEveryElementAlsoInPlace) {
  for (int64_t count : {0, 1, 7, 8, 9, 100}) {
    const Tensor a = random_tensor({count + 1}, 21), b = random_tensor({count + 1}, 22);
    Tensor out = Tensor::filled({count + 1}, 5.0f), in_place = a.clone();
    add_rows(a.data(), b.data(), count, out.data());
    add_rows_inplace(in_place.data(), b.data(), count);
    for (int64_t i = 0; i < count; ++i) {
      ASSERT_EQ(out[i], a[i] + b[i]) << count;
      ASSERT_EQ(in_place[i], a[i] + b[i]) << count;
    }
    EXPECT_EQ(out[count], 5.0f);  // nothing past count
    EXPECT_EQ(in_place[count], a[count]);
  }
}

TEST(DecoderKernels, ConvTransposeRefusesMismatchedWeight) {
  EXPECT_THROW(conv_transpose_2x2_stride2(Tensor({1, 3, 4, 4}), Tensor({4, 2, 2, 2}), Tensor()), Error);
}

TEST(DecoderKernels, PatchConvMatchesReference) {
  for (int k : {1, 2, 4}) {
    for (bool with_bias : {true, false}) {
      SCOPED_TRACE("k=" + std::to_string(k));
      const Tensor x = random_tensor({2, 5, 8, 12}, 10 + k);
      const Tensor w = random_tensor({7, 5, k, k}, 20 + k);
      const Tensor b = with_bias ? random_tensor({7}, 30 + k) : Tensor();
      const Tensor fast = patch_conv(x, w, b);
      EXPECT_EQ(fast.shape(), (Shape{2, 7, 8 / k, 12 / k}));
      EXPECT_LE(max_relative_error(fast, patch_conv_reference(x, w, b)), 1e-5);
    }
  }
}

TEST(DecoderKernels, PatchConvRefusesSizesThatDoNotTile) {
  EXPECT_THROW(patch_conv(Tensor({1, 1, 5, 4}), Tensor({1, 1, 2, 2}), Tensor()), Error);
}

TEST(DecoderKernels, BilinearResizeMatchesReference) {
  const Tensor x = random_tensor({3, 16, 16}, 40, 10.0f);
  // Up, down, mixed (like 64 -> 112 x 288), and a non-square source.
  for (auto [h, w] : {std::pair<int64_t, int64_t>{112, 288}, {7, 5}, {16, 40}, {33, 9}}) {
    SCOPED_TRACE(std::to_string(h) + "x" + std::to_string(w));
    EXPECT_LE(max_relative_error(bilinear_resize(x, h, w), bilinear_resize_reference(x, h, w)), 1e-5);
  }
  const Tensor y = random_tensor({1, 2, 5, 9}, 41);
  EXPECT_LE(max_relative_error(bilinear_resize(y, 11, 4), bilinear_resize_reference(y, 11, 4)), 1e-5);
}

TEST(DecoderKernels, BilinearResizeRoundsAsTheSeparableFloatDefinition) {
  // Every value is (src[lo]*w_lo + src[hi]*w_hi along x, in float) blended the same
  // way along y, whichever path (register permutes, plain loop) and band computes
  // it: 256 -> 1024 and to a photo's size as the decoder does, odd sizes with
  // partial registers, a shrink, and a size that runs on two threads. The first
  // and the second (rows not 64-byte aligned) are large enough to be written by
  // streaming stores.
  for (auto [in_h, in_w, h, w] : {std::array<int64_t, 4>{256, 256, 1024, 1024}, {256, 256, 1500, 1001},
                                   {256, 256, 750, 1000},
                                   {16, 16, 37, 53}, {9, 40, 20, 17}, {5, 31, 3, 47}}) {
    SCOPED_TRACE(std::to_string(in_h) + "x" + std::to_string(in_w) + " -> " + std::to_string(h) + "x" +
                 std::to_string(w));
    const Tensor x = random_tensor({2, in_h, in_w}, 42, 10.0f);
    const LinearTaps rows = linear_taps(in_h, h), cols = linear_taps(in_w, w);
    const Tensor got = bilinear_resize(x, h, w);
    int64_t mismatches = 0;
    for (int64_t p = 0; p < 2; ++p)
      for (int64_t i = 0; i < h; ++i)
        for (int64_t j = 0; j < w; ++j) {
          auto along_x = [&](int64_t row) {
            const float* src = x.data() + (p * in_h + row) * in_w;
            const float a = src[cols.lo[j]] * cols.w_lo[j], b = src[cols.hi[j]] * cols.w_hi[j];
            return a + b;
          };
          const float upper = along_x(rows.lo[i]) * rows.w_lo[i], lower = along_x(rows.hi[i]) * rows.w_hi[i];
          mismatches += got[(p * h + i) * w + j] != upper + lower;
        }
    EXPECT_EQ(mismatches, 0);
  }
}

TEST(DecoderKernels, BilinearResizeSameSizeIsIdentity) {
  const Tensor x = random_tensor({2, 6, 9}, 50);
  const Tensor y = bilinear_resize(x, 6, 9);
  for (int64_t i = 0; i < x.numel(); ++i) EXPECT_EQ(y[i], x[i]);
}

TEST(DecoderKernels, BilinearResizeKnownValues) {
  // 2 -> 4 along one axis: sources -0.25 (clamped to 0), 0.25, 0.75, 1.25 (upper tap clamped).
  Tensor x({1, 2});
  x[0] = 0.0f;
  x[1] = 4.0f;
  const Tensor y = bilinear_resize(x, 1, 4);
  EXPECT_FLOAT_EQ(y[0], 0.0f);
  EXPECT_FLOAT_EQ(y[1], 1.0f);
  EXPECT_FLOAT_EQ(y[2], 3.0f);
  EXPECT_FLOAT_EQ(y[3], 4.0f);
}

TEST(DecoderKernels, BilinearResizeRefusesEmptyTargets) {
  EXPECT_THROW(bilinear_resize(Tensor({1, 4, 4}), 0, 3), Error);
}

TEST(DecoderKernels, BilinearResizeIntoGivenTensorEqualsAllocating) {
  const Tensor x = random_tensor({2, 3, 5, 7}, 31);
  const Tensor want = bilinear_resize(x, 11, 6);
  Tensor y = Tensor::filled({2, 3, 11, 6}, 9.0f);
  bilinear_resize(x, y);
  for (int64_t i = 0; i < y.numel(); ++i) ASSERT_EQ(y[i], want[i]) << i;
  Tensor wrong_planes({2, 2, 11, 6}), no_rows({3, 0, 6});
  EXPECT_THROW(bilinear_resize(x, wrong_planes), Error);
  EXPECT_THROW(bilinear_resize(x, no_rows), Error);
}

TEST(DecoderKernels, TensorRowsShareStorage) {
  Tensor t = Tensor::uninitialized({4, 2, 3});
  for (int64_t i = 0; i < t.numel(); ++i) t[i] = static_cast<float>(i);
  Tensor middle = t.rows(1, 2);
  EXPECT_EQ(middle.shape(), (Shape{2, 2, 3}));
  EXPECT_EQ(middle.numel(), 12);
  EXPECT_EQ(middle[0], 6.0f);
  EXPECT_EQ(middle[11], 17.0f);
  middle[0] = -1.0f;
  EXPECT_EQ(t[6], -1.0f);
  EXPECT_THROW(t.rows(3, 2), Error);
  EXPECT_THROW(t.rows(-1, 1), Error);
}

TEST(DecoderKernels, ThreadScratchKeepsEachSlotsMemory) {
  float* a = thread_scratch(0, 100);
  float* b = thread_scratch(1, 100);
  EXPECT_NE(a, b);
  a[99] = 5.0f;
  EXPECT_EQ(thread_scratch(0, 50), a);  // smaller requests reuse the buffer
  EXPECT_EQ(a[99], 5.0f);
  EXPECT_THROW(thread_scratch(kThreadScratchSlots, 1), Error);
}

}  // namespace
}  // namespace sam2rt
