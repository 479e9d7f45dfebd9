// `sam2rt download` against HTTP(S) servers on the loopback interface, started
// by each test: nothing here touches the internet.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cli_runner.h"
#include "test_paths.h"

namespace sam2rt::testing {
namespace {

namespace fs = std::filesystem;

constexpr size_t kChunk = 64 * 1024;

std::string micro_checkpoint() { return fixtures_dir() + "/micro/micro.pt"; }
std::string micro_config() { return fixtures_dir() + "/micro/sam2.1_micro.yaml"; }

// Serves one file at /<name> with the faults a download meets on the way.
class FileServer {
 public:
  FileServer(std::string name, std::string body, std::unique_ptr<httplib::Server> server)
      : body_(std::move(body)), server_(std::move(server)) {
    server_->Get("/" + name, [this](const httplib::Request& request, httplib::Response& response) {
      serve(request, response);
    });
    port_ = server_->bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_->listen_after_bind(); });
  }
  FileServer(std::string name, std::string body)
      : FileServer(std::move(name), std::move(body), std::make_unique<httplib::Server>()) {}

  ~FileServer() {
    stopping_ = true;
    server_->stop();
    thread_.join();
  }

  bool listening() const { return port_ > 0; }
  std::string url(const std::string& scheme, const std::string& path) const {
    return scheme + "://127.0.0.1:" + std::to_string(port_) + "/" + path;
  }

  // The first response ends (connection closed) after this many bytes of the file.
  void cut_first_response_at(size_t byte) { cut_at_ = byte; }
  // The first response sends this many bytes, then nothing more for `seconds`.
  void stall_first_response_at(size_t byte) { stall_at_ = byte; }
  // Answer every request with the whole file (200), as servers without range support do.
  void ignore_ranges() { ignore_ranges_ = true; }

  // The Range header of every request so far ("" when it had none).
  std::vector<std::string> ranges() const {
    std::lock_guard lock(mutex_);
    return ranges_;
  }

 private:
  void serve(const httplib::Request& request, httplib::Response& response) {
    bool first = false;
    {
      std::lock_guard lock(mutex_);
      first = ranges_.empty();
      ranges_.push_back(request.get_header_value("Range"));
    }
    const size_t end = first ? std::min({cut_at_, stall_at_, body_.size()}) : body_.size();
    const bool stall = first && stall_at_ < body_.size();
    auto provide = [this, end, stall](size_t offset, httplib::DataSink& sink) {
      if (offset >= end) {
        while (stall && !stopping_) std::this_thread::sleep_for(std::chrono::milliseconds(20));
        return false;  // closes the connection mid-file
      }
      return sink.write(body_.data() + offset, std::min(kChunk, end - offset));
    };
    if (ignore_ranges_) {
      // Without a length httplib leaves the Range header alone and sends it all, chunked.
      response.status = 200;
      auto sent = std::make_shared<size_t>(0);
      response.set_chunked_content_provider("application/octet-stream",
                                            [this, provide, sent](size_t, httplib::DataSink& sink) {
                                              if (*sent == body_.size()) {
                                                sink.done();
                                                return true;
                                              }
                                              const bool ok = provide(*sent, sink);
                                              *sent = std::min(body_.size(), *sent + kChunk);
                                              return ok;
                                            });
      return;
    }
    // With a length httplib answers a Range request itself: 206, Content-Range, from the offset.
    response.set_content_provider(body_.size(), "application/octet-stream",
                                  [provide](size_t offset, size_t, httplib::DataSink& sink) {
                                    return provide(offset, sink);
                                  });
  }

  std::string body_;
  std::unique_ptr<httplib::Server> server_;
  int port_ = -1;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  size_t cut_at_ = SIZE_MAX;
  size_t stall_at_ = SIZE_MAX;
  bool ignore_ranges_ = false;
  mutable std::mutex mutex_;
  std::vector<std::string> ranges_;
};

// A port nothing listens on: bound by the kernel's choice, then closed.
int unused_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  ::close(fd);
  return ntohs(address.sin_port);
}

// Exactly one error line, and it is the last line of stderr.
void expect_one_error_line(const CliResult& result) {
  EXPECT_NE(result.exit_code, 0);
  const size_t errors = [&] {
    size_t count = 0;
    for (size_t at = result.err.find("sam2rt: error:"); at != std::string::npos;
         at = result.err.find("sam2rt: error:", at + 1)) {
      ++count;
    }
    return count;
  }();
  EXPECT_EQ(errors, 1u) << result.err;
  const size_t last_line = result.err.rfind('\n', result.err.size() >= 2 ? result.err.size() - 2 : 0);
  EXPECT_EQ(result.err.compare(last_line == std::string::npos ? 0 : last_line + 1, 14, "sam2rt: error:"), 0)
      << result.err;
}

class Download : public ::testing::Test {
 protected:
  void SetUp() override {
    // A proxy from the environment must not stand between the CLI and the loopback server.
    ::setenv("no_proxy", "127.0.0.1", 1);
    ::setenv("NO_PROXY", "127.0.0.1", 1);
    checkpoint_ = read_text(micro_checkpoint());
    ASSERT_GT(checkpoint_.size(), 1'000'000u) << "missing " << micro_checkpoint();
  }

  CliResult download(const std::string& url, std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"download", "--url", url, "--config", micro_config(), "--dir", models_dir()};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_cli(args, scratch_, 60);
  }

  std::string models_dir() const { return scratch_.file("models"); }
  std::string saved() const { return models_dir() + "/micro.pt"; }
  std::string part() const { return saved() + ".part"; }

  ScratchDir scratch_{"download"};
  std::string checkpoint_;
};

TEST_F(Download, CompleteCheckpointIsVerifiedAndSavedUnderItsName) {
  FileServer server("micro.pt", checkpoint_);
  ASSERT_TRUE(server.listening());
  const CliResult result = download(server.url("http", "micro.pt"));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("verified"), std::string::npos) << result.out;
  EXPECT_EQ(read_text(saved()), checkpoint_);
  EXPECT_FALSE(fs::exists(part()));

  const CliResult again = download(server.url("http", "micro.pt"));
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("already there"), std::string::npos) << again.out;
  const CliResult verified = download(server.url("http", "micro.pt"), {"--verify"});
  EXPECT_EQ(verified.exit_code, 0) << verified.err;
  EXPECT_NE(verified.out.find("verified"), std::string::npos) << verified.out;
  EXPECT_EQ(server.ranges().size(), 1u) << "a file already there is not downloaded again";
}

TEST_F(Download, InterruptedTransferKeepsThePartAndARerunResumesIt) {
  FileServer server("micro.pt", checkpoint_);
  const size_t cut = checkpoint_.size() / 2 + 12345;
  server.cut_first_response_at(cut);
  const CliResult interrupted = download(server.url("http", "micro.pt"));
  expect_one_error_line(interrupted);
  EXPECT_NE(interrupted.err.find("run the same command again to resume"), std::string::npos) << interrupted.err;
  ASSERT_TRUE(fs::exists(part()));
  EXPECT_FALSE(fs::exists(saved()));
  const size_t kept = fs::file_size(part());
  ASSERT_GT(kept, 0u);
  ASSERT_LE(kept, cut);
  EXPECT_EQ(read_text(part()), checkpoint_.substr(0, kept));

  const CliResult resumed = download(server.url("http", "micro.pt"));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  const std::vector<std::string> ranges = server.ranges();
  ASSERT_EQ(ranges.size(), 2u);
  EXPECT_EQ(ranges[0], "");
  EXPECT_EQ(ranges[1], "bytes=" + std::to_string(kept) + "-");
  EXPECT_EQ(read_text(saved()), checkpoint_);
  EXPECT_FALSE(fs::exists(part()));
}

TEST_F(Download, ServerWithoutRangeSupportMakesItStartOver) {
  FileServer server("micro.pt", checkpoint_);
  server.ignore_ranges();
  fs::create_directories(models_dir());
  {
    std::ofstream stale(part(), std::ios::binary);
    stale << std::string(1000, 'x');  // bytes a resume would wrongly keep
  }
  const CliResult result = download(server.url("http", "micro.pt"));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.err.find("started over"), std::string::npos) << result.err;
  EXPECT_EQ(server.ranges().front(), "bytes=1000-");
  EXPECT_EQ(read_text(saved()), checkpoint_);
}

TEST_F(Download, CompletePartIsVerifiedWithoutAnotherTransfer) {
  FileServer server("micro.pt", checkpoint_);
  fs::create_directories(models_dir());
  std::ofstream(part(), std::ios::binary) << checkpoint_;
  const CliResult result = download(server.url("http", "micro.pt"));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(server.ranges().front(), "bytes=" + std::to_string(checkpoint_.size()) + "-");
  EXPECT_EQ(read_text(saved()), checkpoint_);
  EXPECT_FALSE(fs::exists(part()));
}

TEST_F(Download, PartLongerThanTheFileIsStartedOver) {
  FileServer server("micro.pt", checkpoint_);
  server.ignore_ranges();
  fs::create_directories(models_dir());
  std::ofstream(part(), std::ios::binary) << checkpoint_ << "trailing bytes";
  const CliResult result = download(server.url("http", "micro.pt"));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(read_text(saved()), checkpoint_);
}

TEST_F(Download, CorruptedCheckpointIsRefusedAndRemoved) {
  std::string corrupted = checkpoint_;
  corrupted[corrupted.size() / 2] = static_cast<char>(corrupted[corrupted.size() / 2] ^ 0x10);
  FileServer server("micro.pt", corrupted);
  const CliResult result = download(server.url("http", "micro.pt"));
  expect_one_error_line(result);
  EXPECT_NE(result.err.find("failed verification and was removed"), std::string::npos) << result.err;
  EXPECT_FALSE(fs::exists(saved()));
  EXPECT_FALSE(fs::exists(part()));
}

TEST_F(Download, CheckpointOfAnotherArchitectureIsRefused) {
  FileServer server("micro.pt", checkpoint_);
  const CliResult result = run_cli({"download", "tiny", "--url", server.url("http", "micro.pt"), "--dir", models_dir()},
                                   scratch_, 60);
  expect_one_error_line(result);
  EXPECT_NE(result.err.find("failed verification and was removed"), std::string::npos) << result.err;
  EXPECT_FALSE(fs::exists(models_dir() + "/sam2.1_hiera_tiny.pt"));
  EXPECT_FALSE(fs::exists(models_dir() + "/sam2.1_hiera_tiny.pt.part"));
}

TEST_F(Download, MissingFileSaysHttp404AndLeavesNothing) {
  FileServer server("micro.pt", checkpoint_);
  const CliResult result = download(server.url("http", "missing.pt"));
  expect_one_error_line(result);
  EXPECT_NE(result.err.find("HTTP 404"), std::string::npos) << result.err;
  EXPECT_FALSE(fs::exists(models_dir() + "/missing.pt"));
  EXPECT_FALSE(fs::exists(models_dir() + "/missing.pt.part"));
}

TEST_F(Download, UnreachableServerFailsFast) {
  const auto start = std::chrono::steady_clock::now();
  const CliResult result = download("http://127.0.0.1:" + std::to_string(unused_port()) + "/micro.pt",
                                    {"--connect-timeout", "5"});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  expect_one_error_line(result);
  EXPECT_NE(result.err.find("failed"), std::string::npos) << result.err;
  EXPECT_LT(seconds, 10.0);
  EXPECT_FALSE(fs::exists(part()));
}

TEST_F(Download, StalledTransferGivesUpAndKeepsThePart) {
  FileServer server("micro.pt", checkpoint_);
  server.stall_first_response_at(checkpoint_.size() / 3);
  const auto start = std::chrono::steady_clock::now();
  const CliResult result = download(server.url("http", "micro.pt"), {"--stall-timeout", "2"});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  expect_one_error_line(result);
  EXPECT_LT(seconds, 20.0);
  EXPECT_TRUE(fs::exists(part()));
}

TEST_F(Download, RefusesUrlsThatAreNotHttp) {
  const CliResult result = download("file://" + micro_checkpoint());
  expect_one_error_line(result);
  EXPECT_NE(result.err.find("only https:// and http://"), std::string::npos) << result.err;
  EXPECT_FALSE(fs::exists(models_dir()));
}

TEST_F(Download, HttpsWithTheServersCertificateInCaFile) {
  const std::string certificate = scratch_.file("cert.pem"), key = scratch_.file("key.pem");
  const std::string make_certificate =
      "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 "
      "-keyout " + shell_quote(key) + " -out " + shell_quote(certificate) + " >/dev/null 2>&1";
  ASSERT_EQ(std::system(make_certificate.c_str()), 0) << "openssl could not make a certificate";
  FileServer server("micro.pt", checkpoint_,
                    std::make_unique<httplib::SSLServer>(certificate.c_str(), key.c_str()));
  ASSERT_TRUE(server.listening());

  const CliResult untrusted = download(server.url("https", "micro.pt"));
  expect_one_error_line(untrusted);
  EXPECT_NE(untrusted.err.find("certificate"), std::string::npos) << untrusted.err;
  EXPECT_FALSE(fs::exists(saved()));

  const CliResult trusted = download(server.url("https", "micro.pt"), {"--ca-file", certificate});
  ASSERT_EQ(trusted.exit_code, 0) << trusted.err;
  EXPECT_EQ(read_text(saved()), checkpoint_);
}

}  // namespace
}  // namespace sam2rt::testing
