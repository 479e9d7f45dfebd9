#include "model/synthetic_weights.h"

#include "core/error.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <fstream>

#include "model/config.h"
#include "model/weight_manifest.h"
#include "test_paths.h"

namespace sam2rt {
namespace {

nlohmann::json load_json(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  return nlohmann::json::parse(in);
}

// Exactly rounded sum (like Python's math.fsum) via Neumaier-free two-sum expansion.
double exact_sum(const Tensor& t) {
  std::vector<double> partials;
  for (float f : t) {
    double x = f;
    size_t i = 0;
    for (double y : partials) {
      if (std::fabs(x) < std::fabs(y)) std::swap(x, y);
      double hi = x + y;
      double lo = y - (hi - x);
      if (lo != 0.0) partials[i++] = lo;
      x = hi;
    }
    partials.resize(i);
    partials.push_back(x);
  }
  // Round the expansion the way math.fsum does.
  double hi = 0.0;
  if (!partials.empty()) {
    size_t n = partials.size();
    hi = partials[--n];
    double lo = 0.0;
    while (n > 0) {
      double x = hi;
      double y = partials[--n];
      hi = x + y;
      double yr = hi - x;
      lo = y - yr;
      if (lo != 0.0) break;
    }
    if (n > 0 && ((lo < 0 && partials[n - 1] < 0) || (lo > 0 && partials[n - 1] > 0))) {
      double y = lo * 2;
      double x = hi + y;
      if (y == x - hi) hi = x;
    }
  }
  return hi;
}

TEST(SyntheticWeights, MatchesWeightsCheckBitForBit) {
  auto check = load_json(testing::fixtures_dir() + "/weights-check.json");
  ASSERT_EQ(check["salt"], "0x0000000000000000");
  int checked = 0;
  for (const auto& entry : check["entries"]) {
    const std::string key = entry["key"];
    Shape shape = entry["shape"].get<Shape>();
    EXPECT_EQ(fnv1a64(key), std::stoull(entry["fnv1a64"].get<std::string>(), nullptr, 16)) << key;
    Tensor t = generate_weight(key, shape, 0);
    const auto& bits = entry["first8_bits"];
    for (size_t i = 0; i < bits.size(); ++i) {
      uint32_t actual;
      std::memcpy(&actual, &t[static_cast<int64_t>(i)], 4);
      EXPECT_EQ(actual, std::stoul(bits[i].get<std::string>(), nullptr, 16)) << key << " element " << i;
    }
    EXPECT_EQ(exact_sum(t), entry["sum_f64"].get<double>()) << key;
    ++checked;
  }
  EXPECT_GE(checked, 11);
}

TEST(SyntheticWeights, EveryTinyKeyMatchesManifestSum) {
  auto manifest = load_json(testing::fixtures_dir() + "/tiny/state_dict_manifest.json");
  ASSERT_EQ(manifest["keys"].size(), 471u);
  for (const auto& entry : manifest["keys"]) {
    const std::string key = entry["key"];
    Tensor t = generate_weight(key, entry["shape"].get<Shape>(), 0);
    ASSERT_EQ(exact_sum(t), entry["sum_f64"].get<double>()) << key;
  }
}

TEST(SyntheticWeights, TinyImagePathManifestAgreesWithOfficialShapes) {
  auto manifest = load_json(testing::fixtures_dir() + "/tiny/state_dict_manifest.json");
  std::map<std::string, Shape> official;
  for (const auto& entry : manifest["keys"]) official[entry["key"]] = entry["shape"].get<Shape>();
  auto specs = image_path_weights(preset_config("tiny"));
  EXPECT_GT(specs.size(), 200u);
  for (const auto& spec : specs) {
    ASSERT_TRUE(official.count(spec.key)) << spec.key << " is not an official key";
    EXPECT_EQ(official[spec.key], spec.shape) << spec.key;
  }
}

TEST(SyntheticWeights, SaltChangesValues) {
  Tensor a = generate_weight("x.bias", {4}, 0);
  Tensor b = generate_weight("x.bias", {4}, 1);
  EXPECT_NE(a[0], b[0]);
}

TEST(SyntheticWeights, ParsesSalt) {
  EXPECT_EQ(parse_salt("0"), 0u);
  EXPECT_EQ(parse_salt("18446744073709551615"), 18446744073709551615ull);
  EXPECT_EQ(parse_salt("0xff"), 255u);
  EXPECT_THROW(parse_salt("18446744073709551616"), Error);
  EXPECT_THROW(parse_salt("-1"), Error);
  EXPECT_THROW(parse_salt("0x"), Error);
  EXPECT_THROW(parse_salt("12ab"), Error);
  EXPECT_THROW(parse_salt(""), Error);
}

}  // namespace
}  // namespace sam2rt
