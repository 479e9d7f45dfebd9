#pragma once

// Golden comparisons for feature maps: 1 - cos and max |err| in double (from
// core/tensor_compare.h), failing outright when the shapes differ.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/tensor.h"
#include "core/tensor_compare.h"
#include "model/features.h"

namespace sam2rt::testing {

struct Agreement {
  double one_minus_cos = 1.0;
  double max_abs_err = INFINITY;
};

inline Agreement agreement(const Tensor& actual, const Tensor& expected) {
  if (actual.shape() != expected.shape()) return {};
  const TensorDifference d = compare_tensors(actual, expected);
  return {d.one_minus_cos, d.max_abs_err};
}

using sam2rt::decimate;

// The decoder features `actual` are `expected` bit for bit (same shapes, same bytes).
inline void expect_same_bits(const DecoderFeatures& actual, const DecoderFeatures& expected) {
  for (const auto& [name, pair] : {std::pair{"image_embed", std::pair{&actual.image_embed, &expected.image_embed}},
                                   std::pair{"feat_s1", std::pair{&actual.feat_s1, &expected.feat_s1}},
                                   std::pair{"feat_s0", std::pair{&actual.feat_s0, &expected.feat_s0}}}) {
    ASSERT_EQ(pair.first->shape(), pair.second->shape()) << name;
    EXPECT_EQ(std::memcmp(pair.first->data(), pair.second->data(), sizeof(float) * pair.first->numel()), 0) << name;
  }
}

}  // namespace sam2rt::testing
