#include "core/tensor_compare.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace sam2rt {

TensorDifference compare_tensors(const Tensor& actual, const Tensor& expected) {
  if (actual.numel() != expected.numel()) {
    throw Error("cannot compare " + shape_to_string(actual.shape()) + " with " + shape_to_string(expected.shape()));
  }
  TensorDifference d;
  double dot = 0.0, na = 0.0, ne = 0.0, abs_sum = 0.0;
  for (int64_t i = 0; i < actual.numel(); ++i) {
    const double a = actual[i], e = expected[i];
    dot += a * e;
    na += a * a;
    ne += e * e;
    const double err = std::fabs(a - e);
    abs_sum += err;
    d.max_abs_err = std::max(d.max_abs_err, std::isnan(err) ? INFINITY : err);
  }
  if (na == 0.0 && ne == 0.0) {
    d.one_minus_cos = 0.0;
  } else if (na == 0.0 || ne == 0.0) {
    d.one_minus_cos = 1.0;
  } else {
    d.one_minus_cos = 1.0 - dot / (std::sqrt(na) * std::sqrt(ne));
  }
  if (std::isnan(d.one_minus_cos)) d.one_minus_cos = INFINITY;
  d.mean_abs_err = actual.numel() ? abs_sum / static_cast<double>(actual.numel()) : 0.0;
  return d;
}

Tensor decimate(const Tensor& x, int64_t step) {
  if (x.rank() < 2 || step < 1) throw Error("decimate needs a tensor of rank >= 2 and a positive step");
  const int64_t h = x.dim(-2), w = x.dim(-1);
  const int64_t oh = (h + step - 1) / step, ow = (w + step - 1) / step;
  const int64_t planes = x.numel() / (h * w);
  Shape shape = x.shape();
  shape[shape.size() - 2] = oh;
  shape[shape.size() - 1] = ow;
  Tensor y(shape);
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) y[(p * oh + i) * ow + j] = x[(p * h + i * step) * w + j * step];
  return y;
}

}  // namespace sam2rt
