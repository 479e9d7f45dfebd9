#include "kernels/stage_profile.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace sam2rt {

namespace {

struct Totals {
  std::mutex mutex;
  std::map<std::string, std::pair<double, long long>> ms_and_calls;
};

Totals& totals() {
  static Totals t;
  return t;
}

long long now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

bool stage_profile_enabled() {
  static const bool enabled = [] {
    const char* value = std::getenv("SAM2RT_PROFILE");
    return value && *value && std::string(value) != "0";
  }();
  return enabled;
}

ScopedStage::ScopedStage(const char* name) : name_(stage_profile_enabled() ? name : nullptr) {
  if (name_) start_ns_ = now_ns();
}

ScopedStage::~ScopedStage() {
  if (!name_) return;
  const double ms = static_cast<double>(now_ns() - start_ns_) * 1e-6;
  std::lock_guard lock(totals().mutex);
  auto& entry = totals().ms_and_calls[name_];
  entry.first += ms;
  entry.second += 1;
}

void stage_profile_reset() {
  std::lock_guard lock(totals().mutex);
  totals().ms_and_calls.clear();
}

void stage_profile_print(std::FILE* out, int runs, const char* per) {
  std::lock_guard lock(totals().mutex);
  std::vector<std::pair<std::string, std::pair<double, long long>>> rows(totals().ms_and_calls.begin(),
                                                                         totals().ms_and_calls.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  const std::string header = std::string("stage (per ") + per + ")";
  int width = static_cast<int>(header.size());
  for (const auto& row : rows) width = std::max(width, static_cast<int>(row.first.size()));
  const double per_run = 1.0 / std::max(runs, 1);
  double sum = 0.0;
  std::fprintf(out, "%-*s %10s %8s\n", width, header.c_str(), "ms", "calls");
  for (const auto& [name, value] : rows) {
    std::fprintf(out, "%-*s %10.2f %8.1f\n", width, name.c_str(), value.first * per_run,
                 static_cast<double>(value.second) * per_run);
    sum += value.first * per_run;
  }
  std::fprintf(out, "%-*s %10.2f\n", width, "sum", sum);
}

}  // namespace sam2rt
