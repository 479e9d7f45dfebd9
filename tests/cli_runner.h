#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "test_paths.h"

namespace sam2rt::testing {

struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') {
      q.append("'\\''");
    } else {
      q.push_back(c);
    }
  }
  q.push_back('\'');
  return q;
}

inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A fresh scratch directory per test, removed at the end of the test.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& name)
      : path_(std::filesystem::temp_directory_path() / ("sam2rt_test_" + name + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Runs the sam2rt binary with the given arguments; stdout and stderr captured separately.
// With timeout_seconds > 0 a hanging run is killed and exits with 124 (coreutils timeout).
inline CliResult run_cli(const std::vector<std::string>& args, const ScratchDir& scratch, int timeout_seconds = 0) {
  std::string command = timeout_seconds > 0 ? "timeout -k 5 " + std::to_string(timeout_seconds) + " " : "";
  command.append(shell_quote(cli_path()));
  for (const auto& a : args) {
    command.push_back(' ');
    command.append(shell_quote(a));
  }
  const std::string out_file = scratch.file("stdout.txt"), err_file = scratch.file("stderr.txt");
  command.append(" >").append(shell_quote(out_file)).append(" 2>").append(shell_quote(err_file));
  const int status = std::system(command.c_str());
  CliResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = read_text(out_file);
  result.err = read_text(err_file);
  return result;
}

}  // namespace sam2rt::testing
