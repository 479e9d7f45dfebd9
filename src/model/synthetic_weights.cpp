#include "model/synthetic_weights.h"

#include <cmath>
#include <cstdlib>
#include <cctype>
#include <cerrno>

#include "core/error.h"
#include "model/weight_manifest.h"

namespace sam2rt {

uint64_t fnv1a64(const std::string& bytes) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char b : bytes) {
    h ^= b;
    h *= 0x100000001b3ULL;
  }
  return h;
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  uint64_t z = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

namespace {

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

Tensor generate_weight(const std::string& key, const Shape& shape, uint64_t salt) {
  enum class Rule { kScaled, kNormScale };
  Rule rule = Rule::kScaled;
  double scale = 0.1;
  if (ends_with(key, "positional_encoding_gaussian_matrix")) {
    scale = std::sqrt(3.0);
  } else if (ends_with(key, ".weight") && shape.size() >= 2) {
    int64_t fan_in = 1;
    for (size_t i = 1; i < shape.size(); ++i) fan_in *= shape[i];
    scale = std::sqrt(3.0 / static_cast<double>(fan_in));
  } else if (ends_with(key, ".weight") && shape.size() == 1) {
    rule = Rule::kNormScale;
  } else if (ends_with(key, ".bias")) {
    scale = 0.02;
  }

  // Every element is written below: no zeroing pass, and the first touch of
  // the pages (most of the cost) happens in the parallel loop.
  Tensor tensor = Tensor::uninitialized(shape);
  const uint64_t seed = fnv1a64(key) ^ salt;
  float* out = tensor.data();
  const int64_t n = tensor.numel();
#pragma omp parallel for schedule(static) if (n > (1 << 16))
  for (int64_t i = 0; i < n; ++i) {
    uint64_t h = splitmix64(seed + static_cast<uint64_t>(i));
    double u = static_cast<double>(h >> 11) * 0x1.0p-53;
    double v = 2.0 * u - 1.0;
    if (rule == Rule::kNormScale) {
      double delta = 0.1 * v;
      out[i] = static_cast<float>(1.0 + delta);
    } else {
      out[i] = static_cast<float>(v * scale);
    }
  }
  return tensor;
}

WeightMap synthetic_weights(const ModelConfig& config, uint64_t salt) {
  WeightMap weights;
  for (const WeightSpec& spec : image_path_weights(config)) {
    weights.insert(spec.key, generate_weight(spec.key, spec.shape, salt));
  }
  return weights;
}

uint64_t parse_salt(const std::string& text) {
  const bool hex = text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
  const std::string digits = hex ? text.substr(2) : text;
  bool ok = !digits.empty();
  for (char ch : digits) ok = ok && (hex ? std::isxdigit(static_cast<unsigned char>(ch)) : std::isdigit(static_cast<unsigned char>(ch)));
  if (ok) {
    errno = 0;
    char* end = nullptr;
    unsigned long long value = std::strtoull(digits.c_str(), &end, hex ? 16 : 10);
    if (errno == 0 && end && *end == '\0') return value;
  }
  throw Error("--synthetic-weights: '" + text +
              "' is not a 64-bit unsigned integer (decimal, or hex with 0x)");
}

}  // namespace sam2rt
