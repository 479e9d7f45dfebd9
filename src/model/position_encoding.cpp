#include "model/position_encoding.h"

#include <cmath>
#include <numbers>
#include <vector>

#include "core/error.h"

namespace sam2rt {

namespace {

// The encoding of positions 1..n along one axis: [n, feats], float32 arithmetic
// in the official order.
std::vector<float> encode_axis(int64_t n, int64_t feats, float temperature, bool normalize) {
  const float scale = static_cast<float>(2.0 * std::numbers::pi);
  const float last = static_cast<float>(n) + 1e-6f;
  std::vector<float> dim_t(static_cast<size_t>(feats));
  for (int64_t i = 0; i < feats; ++i) {
    const float exponent = 2.0f * std::floor(static_cast<float>(i) / 2.0f) / static_cast<float>(feats);
    dim_t[static_cast<size_t>(i)] = std::pow(temperature, exponent);
  }
  std::vector<float> table(static_cast<size_t>(n * feats));
  for (int64_t p = 0; p < n; ++p) {
    float embed = static_cast<float>(p + 1);
    if (normalize) embed = embed / last * scale;
    for (int64_t i = 0; i < feats; ++i) {
      const float angle = embed / dim_t[static_cast<size_t>(i)];
      table[static_cast<size_t>(p * feats + i)] = (i % 2 == 0) ? std::sin(angle) : std::cos(angle);
    }
  }
  return table;
}

}  // namespace

Tensor sine_position_encoding(int64_t num_pos_feats, int64_t height, int64_t width, double temperature,
                              bool normalize) {
  if (num_pos_feats < 2 || num_pos_feats % 2 != 0) {
    throw Error("sine position encoding: num_pos_feats must be even and positive (got " +
                std::to_string(num_pos_feats) + ")");
  }
  if (height < 1 || width < 1) throw Error("sine position encoding: map size must be positive");
  const int64_t feats = num_pos_feats / 2;
  const auto t = static_cast<float>(temperature);
  const std::vector<float> ys = encode_axis(height, feats, t, normalize);
  const std::vector<float> xs = encode_axis(width, feats, t, normalize);
  Tensor out({1, num_pos_feats, height, width});
  for (int64_t i = 0; i < feats; ++i) {
    float* y_plane = out.data() + i * height * width;
    float* x_plane = out.data() + (feats + i) * height * width;
    for (int64_t y = 0; y < height; ++y) {
      for (int64_t x = 0; x < width; ++x) {
        y_plane[y * width + x] = ys[static_cast<size_t>(y * feats + i)];
        x_plane[y * width + x] = xs[static_cast<size_t>(x * feats + i)];
      }
    }
  }
  return out;
}

}  // namespace sam2rt
