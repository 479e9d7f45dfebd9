#include <cstdio>
#include <memory>
#include <optional>
#include <set>

#include "commands.h"
#include "core/error.h"
#include "core/tensor_compare.h"
#include "io/printable_text.h"
#include "io/safetensors.h"

namespace sam2rt::cli {

namespace {

// Splits "X.dec8" into ("X", 8); plain keys give step 1. (No std::regex: it
// recurses per character and a hostile file's key can be megabytes long.)
std::pair<std::string, int64_t> split_decimated(const std::string& key) {
  const size_t dot = key.rfind(".dec");
  if (dot == std::string::npos) return {key, 1};
  const std::string digits = key.substr(dot + 4);
  if (digits.empty() || digits.size() > 4 || digits.find_first_not_of("0123456789") != std::string::npos) {
    return {key, 1};
  }
  return {key.substr(0, dot), std::stoll(digits)};
}

// decimate() needs a non-empty plane to step through.
Tensor decimated(const Tensor& x, int64_t step, const std::string& key) {
  if (x.rank() < 2 || x.dim(-2) == 0 || x.dim(-1) == 0 || step < 1) {
    throw Error("cannot compare '" + printable(key) + "': shape " + shape_to_string(x.shape()) +
                " has no pixel planes, nothing to decimate by " + std::to_string(step));
  }
  return decimate(x, step);
}

struct ComparePair {
  std::string label;
  Tensor a, b;
};

struct CompareCommand {
  std::string path_a, path_b;
  std::vector<std::string> keys;
  std::optional<double> max_abs;        // largest max|err| a tensor may have
  std::optional<double> one_minus_cos;  // largest 1-cos a tensor may have
  double max_abs_value = 0, one_minus_cos_value = 0;  // as parsed, taken when the option was given

  std::string tolerance_text() const {
    std::string text;
    if (max_abs) text += "max|err| <= " + std::to_string(*max_abs);
    if (one_minus_cos) text += std::string(text.empty() ? "" : ", ") + "1-cos <= " + std::to_string(*one_minus_cos);
    return text;
  }

  void run() const {
    const SafetensorsFile a = read_safetensors(path_a);
    const SafetensorsFile b = read_safetensors(path_b);
    std::vector<ComparePair> pairs;
    std::set<std::string> matched;
    auto consider = [&](const std::string& key_a, const Tensor& ta) {
      if (auto it = b.tensors.find(key_a); it != b.tensors.end()) {
        pairs.push_back({key_a, ta, it->second});
        matched.insert(key_a);
        return;
      }
      auto [base_a, step_a] = split_decimated(key_a);
      if (step_a > 1) {  // A holds X.decS, B holds X
        if (auto it = b.tensors.find(base_a); it != b.tensors.end()) {
          pairs.push_back({key_a, ta, decimated(it->second, step_a, key_a)});
          matched.insert(key_a);
          matched.insert(base_a);
        }
        return;
      }
      for (const auto& [key_b, tb] : b.tensors) {  // A holds X, B holds X.decS
        auto [base_b, step_b] = split_decimated(key_b);
        if (step_b > 1 && base_b == key_a) {
          pairs.push_back({key_b, decimated(ta, step_b, key_b), tb});
          matched.insert(key_a);
          matched.insert(key_b);
        }
      }
    };
    for (const auto& [key, tensor] : a.tensors) {
      if (keys.empty() || std::find(keys.begin(), keys.end(), key) != keys.end() ||
          std::find(keys.begin(), keys.end(), split_decimated(key).first) != keys.end()) {
        consider(key, tensor);
      }
    }
    bool failed = false;
    for (const std::string& key : keys) {
      if (!matched.count(key)) {
        std::fprintf(stderr, "sam2rt: error: key '%s' is not present in both files\n", printable(key).c_str());
        failed = true;
      }
    }
    if (pairs.empty() && keys.empty()) {
      std::fprintf(stderr, "sam2rt: error: the two files have no tensor in common\n");
      failed = true;
    }
    std::printf("%-36s %-22s %12s %12s %12s\n", "tensor", "shape", "1-cos", "mean|err|", "max|err|");
    int out_of_tolerance = 0;
    for (const ComparePair& p : pairs) {
      if (p.a.shape() != p.b.shape()) {
        std::printf("%-36s shape mismatch: %s vs %s\n", printable(p.label).c_str(),
                    shape_to_string(p.a.shape()).c_str(), shape_to_string(p.b.shape()).c_str());
        failed = true;
        continue;
      }
      const TensorDifference d = compare_tensors(p.a, p.b);
      // Written so that a NaN error is out of tolerance too.
      const bool within =
          (!max_abs || d.max_abs_err <= *max_abs) && (!one_minus_cos || d.one_minus_cos <= *one_minus_cos);
      std::printf("%-36s %-22s %12.3e %12.3e %12.3e%s\n", printable(p.label).c_str(),
                  shape_to_string(p.a.shape()).c_str(), d.one_minus_cos, d.mean_abs_err, d.max_abs_err,
                  within ? "" : "  OUT OF TOLERANCE");
      if (!within) ++out_of_tolerance;
    }
    if (out_of_tolerance > 0) {
      std::fprintf(stderr, "sam2rt: error: %d of %zu tensors out of tolerance (%s)\n", out_of_tolerance, pairs.size(),
                   tolerance_text().c_str());
      throw CLI::RuntimeError(1);
    }
    if (failed) throw CLI::RuntimeError(1);
  }
};

}  // namespace

void register_compare(CLI::App& app) {
  auto command = std::make_shared<CompareCommand>();
  CLI::App* sub = app.add_subcommand(
      "compare",
      "Compare the tensors of two .safetensors files (1-cos, abs error).\n"
      "Compare the tensors two .safetensors files have in common (a key X.decS in one file is compared with "
      "X[..., ::S, ::S] of the other): shape, 1-cos, mean and max abs error. Exits 1 on a shape mismatch, a "
      "missing requested key or a tensor beyond --max-abs / --one-minus-cos.");
  sub->add_option("a", command->path_a, "first file (e.g. sam2rt output)")->required()->check(CLI::ExistingFile);
  sub->add_option("b", command->path_b, "second file (e.g. a golden)")->required()->check(CLI::ExistingFile);
  sub->add_option("--keys", command->keys, "only these tensors (each must be present in both)");
  auto* max_abs = sub->add_option("--max-abs", command->max_abs_value,
                                   "fail (exit 1) when a tensor's max|err| exceeds this")
                       ->check(CLI::NonNegativeNumber);
  auto* one_minus_cos = sub->add_option("--one-minus-cos", command->one_minus_cos_value,
                                         "fail (exit 1) when a tensor's 1-cos exceeds this")
                             ->check(CLI::NonNegativeNumber);
  sub->callback([command, max_abs, one_minus_cos] {
    if (max_abs->count()) command->max_abs = command->max_abs_value;
    if (one_minus_cos->count()) command->one_minus_cos = command->one_minus_cos_value;
    command->run();
  });
}

}  // namespace sam2rt::cli
