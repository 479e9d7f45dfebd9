#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "model/two_way_transformer.h"

namespace sam2rt {
namespace {

Tensor random_tensor(Shape shape, std::mt19937& rng, float scale = 1.0f) {
  std::uniform_real_distribution<float> dist(-scale, scale);
  Tensor t(std::move(shape));
  for (float& v : t) v = dist(rng);
  return t;
}

DecoderAttention random_attention(int64_t c, int64_t width, int heads, std::mt19937& rng) {
  auto linear = [&](int64_t out, int64_t in) { return DecoderLinear{random_tensor({out, in}, rng, 0.2f), random_tensor({out}, rng), {}}; };
  return DecoderAttention{linear(width, c), linear(width, c), linear(width, c), linear(c, width), heads};
}

double max_abs_difference(const Tensor& a, const Tensor& b) {
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i) worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - b[i]));
  return worst;
}

// Image rows attending to tokens: the folded form equals the plain attention,
// both from raw rows and from rows already through q_proj.
TEST(FoldedTokenAttention, EqualsDecoderAttention) {
  std::mt19937 rng(3);
  const int64_t c = 32, width = 16, rows = 37, tokens = 5;
  const int heads = 4;
  const DecoderAttention attn = random_attention(c, width, heads, rng);
  const Tensor image = random_tensor({rows, c}, rng, 2.0f), token_in = random_tensor({tokens, c}, rng, 2.0f);
  const Tensor want = attn(image, token_in, token_in);

  const Tensor token_k = attn.k_proj(token_in), token_v = attn.v_proj(token_in);
  Tensor from_raw({rows, c});
  attn.fold_tokens(token_k, token_v, true).apply(image.data(), rows, from_raw.data());
  EXPECT_LE(max_abs_difference(from_raw, want), 1e-5);

  const Tensor projected = attn.q_proj(image);
  Tensor from_projected({rows, c});
  attn.fold_tokens(token_k, token_v, false).apply(projected.data(), rows, from_projected.data());
  EXPECT_LE(max_abs_difference(from_projected, want), 1e-5);
}

// Tokens attending to image rows with the image-side projections folded into
// the queries equals the plain attention, on one thread and shared by two.
TEST(DecoderAttentionImage, EqualsDecoderAttention) {
  std::mt19937 rng(4);
  const int64_t c = 32, width = 16, rows = 301, tokens = 7;
  const int heads = 4;
  const DecoderAttention attn = random_attention(c, width, heads, rng);
  const Tensor keys_pe = random_tensor({rows, c}, rng, 2.0f), values = random_tensor({rows, c}, rng, 2.0f);
  const Tensor token_in = random_tensor({tokens, c}, rng, 2.0f);
  const Tensor want = attn(token_in, keys_pe, values);
  const Tensor q = attn.q_proj(token_in);
  for (int threads : {1, 2, 3}) {
    Tensor got({tokens, c});
    attn.attend_image(q.data(), tokens, keys_pe.data(), values.data(), rows, got.data(), threads);
    EXPECT_LE(max_abs_difference(got, want), 1e-5) << threads << " threads";
  }
}

}  // namespace
}  // namespace sam2rt
