#pragma once

#include <memory>
#include <string>
#include <vector>

#include "io/atomic_file.h"

namespace sam2rt::cli {

// The output files of one run, each opened as a temporary beside its target
// before any work is done: a missing directory fails at once, and a run that
// fails later (bad prompt, corrupt features) replaces none of the targets.
class StagedOutputs {
 public:
  // nullptr for an empty path (an output the user did not ask for). `flag`
  // names the option in errors, e.g. "--overlay".
  AtomicFile* add(const std::string& path, const std::string& flag);
  // Renames every staged file over its target.
  void commit_all();

 private:
  std::vector<std::unique_ptr<AtomicFile>> files_;
};

// For a command with one output written by a path-taking writer (already
// atomic): fails now, before the work, if `path` cannot be written.
void require_writable(const std::string& path, const std::string& flag);

}  // namespace sam2rt::cli
