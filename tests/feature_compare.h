#pragma once

// Golden comparisons for feature maps: 1 - cos and max |err| in double, and the
// X[..., ::s, ::s] decimation of the tiny fixtures.
#include <algorithm>
#include <cmath>

#include "core/tensor.h"

namespace sam2rt::testing {

struct Agreement {
  double one_minus_cos = 1.0;
  double max_abs_err = INFINITY;
};

inline Agreement agreement(const Tensor& actual, const Tensor& expected) {
  Agreement a;
  if (actual.shape() != expected.shape()) return a;
  double dot = 0.0, na = 0.0, nb = 0.0, worst = 0.0;
  for (int64_t i = 0; i < actual.numel(); ++i) {
    const double x = actual[i], y = expected[i];
    dot += x * y;
    na += x * x;
    nb += y * y;
    const double err = std::fabs(x - y);
    worst = std::isnan(err) ? INFINITY : std::max(worst, err);
  }
  a.one_minus_cos = (na == 0.0 && nb == 0.0) ? 0.0 : 1.0 - dot / std::sqrt(na * nb);
  a.max_abs_err = worst;
  return a;
}

// X[..., ::step, ::step] over the last two axes.
inline Tensor decimate(const Tensor& x, int64_t step) {
  const int64_t h = x.dim(-2), w = x.dim(-1), planes = x.numel() / (h * w);
  const int64_t oh = (h + step - 1) / step, ow = (w + step - 1) / step;
  Shape shape = x.shape();
  shape[shape.size() - 2] = oh;
  shape.back() = ow;
  Tensor out(shape);
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t xx = 0; xx < ow; ++xx) out[(p * oh + y) * ow + xx] = x[(p * h + y * step) * w + xx * step];
  return out;
}

}  // namespace sam2rt::testing
