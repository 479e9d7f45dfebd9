#pragma once

// The real `sam2rt serve` binary on the micro config (synthetic weights unless
// asked otherwise), as a child process for the HTTP tests.

#include <httplib.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <regex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "test_paths.h"

namespace sam2rt::testing {

// The model flags of the micro config on synthetic weights (the default), or on
// the fixture checkpoint micro.pt (masks that follow the picture).
inline std::vector<std::string> synthetic_micro_args() {
  return {"--synthetic-weights", "0", "--config", fixtures_dir() + "/micro/sam2.1_micro.yaml"};
}
inline std::vector<std::string> micro_checkpoint_args() {
  return {"--model", fixtures_dir() + "/micro/micro.pt", "--config", fixtures_dir() + "/micro/sam2.1_micro.yaml"};
}

// Starts `sam2rt serve --port 0 ...`, reads the URL from its first stdout line
// and stops it with SIGTERM.
class ServerProcess {
 public:
  explicit ServerProcess(std::vector<std::string> extra_args = {}, int port = 0,
                         std::vector<std::string> model_args = synthetic_micro_args()) {
    std::vector<std::string> args = {cli_path(), "serve", "--port", std::to_string(port)};
    args.insert(args.end(), model_args.begin(), model_args.end());
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    int out[2];
    if (pipe(out) != 0) throw std::runtime_error("pipe failed");
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], STDOUT_FILENO);
      close(out[0]);
      close(out[1]);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(out[1]);
    stdout_fd_ = out[0];
    url_ = read_first_line(std::chrono::seconds(120));
    std::smatch match;
    if (std::regex_match(url_, match, std::regex(R"(http://127\.0\.0\.1:(\d+)/)"))) port_ = std::stoi(match[1]);
  }

  ~ServerProcess() {
    if (pid_ > 0) stop();
    if (stdout_fd_ >= 0) close(stdout_fd_);
  }

  // SIGTERM, then the exit status (-1 if it had to be killed after 30 s).
  int stop() {
    kill(pid_, SIGTERM);
    int status = 0;
    for (int i = 0; i < 3000; ++i) {
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return -1;
  }

  const std::string& url() const { return url_; }
  pid_t pid() const { return pid_; }
  int port() const { return port_; }
  bool alive() const { return pid_ > 0 && waitpid(pid_, nullptr, WNOHANG) == 0; }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(60, 0);
    c.set_write_timeout(60, 0);
    return c;
  }

 private:
  std::string read_first_line(std::chrono::seconds timeout) {
    std::string line;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd fd{stdout_fd_, POLLIN, 0};
      if (poll(&fd, 1, 100) <= 0) continue;
      char c;
      if (read(stdout_fd_, &c, 1) != 1) break;
      if (c == '\n') return line;
      line += c;
    }
    return line;
  }

  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  std::string url_;
  int port_ = 0;
};

}  // namespace sam2rt::testing
