#pragma once

#include <cstdio>

namespace sam2rt {

// Opt-in wall-clock breakdown by stage name: set SAM2RT_PROFILE=1 in the
// environment. Disabled, a ScopedStage costs one branch.
bool stage_profile_enabled();

class ScopedStage {
 public:
  explicit ScopedStage(const char* name);
  ~ScopedStage();
  ScopedStage(const ScopedStage&) = delete;
  ScopedStage& operator=(const ScopedStage&) = delete;

 private:
  const char* name_;
  long long start_ns_ = 0;
};

void stage_profile_reset();
// Prints each stage's total divided by `runs`, largest first, and the sum,
// under the header "stage (per <per>)".
void stage_profile_print(std::FILE* out, int runs, const char* per);

}  // namespace sam2rt
