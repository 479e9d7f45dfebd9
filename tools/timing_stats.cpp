#include "timing_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace sam2rt::cli {

TimingStats summarize(std::vector<double> samples) {
  TimingStats s;
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  const size_t n = samples.size();
  s.runs = static_cast<int>(n);
  s.min = samples.front();
  s.max = samples.back();
  s.median = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
  s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(n);
  double sq = 0.0;
  for (double v : samples) sq += (v - s.mean) * (v - s.mean);
  s.std = std::sqrt(sq / static_cast<double>(n));
  return s;
}

nlohmann::json to_json(const TimingStats& s) {
  return {{"min", s.min}, {"median", s.median}, {"mean", s.mean}, {"max", s.max}, {"std", s.std}, {"runs", s.runs}};
}

}  // namespace sam2rt::cli
