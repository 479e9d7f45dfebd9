#pragma once

#include <nlohmann/json.hpp>

#include <vector>

namespace sam2rt::cli {

// Summary of repeated timings in milliseconds (std is the population deviation).
struct TimingStats {
  double min = 0, median = 0, mean = 0, max = 0, std = 0;
  int runs = 0;
};

TimingStats summarize(std::vector<double> samples_ms);
nlohmann::json to_json(const TimingStats& stats);

}  // namespace sam2rt::cli
