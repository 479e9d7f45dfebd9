#include "io/atomic_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include "core/error.h"

namespace sam2rt {

namespace {

// The process's umask without changing it: Linux reports it in /proc/self/status
// (since 4.7). Elsewhere umask() must set it to read it, which races with other
// threads creating files, so that is done under a lock.
mode_t current_umask() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Umask:", 0) == 0) return static_cast<mode_t>(std::strtoul(line.c_str() + 6, nullptr, 8));
  }
  static std::mutex lock;
  const std::lock_guard<std::mutex> guard(lock);
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return mask;
}

}  // namespace

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  std::vector<char> name(path_.begin(), path_.end());
  const std::string suffix = ".tmp.XXXXXX";
  name.insert(name.end(), suffix.begin(), suffix.end());
  name.push_back('\0');
  int fd = ::mkstemp(name.data());
  if (fd < 0) {
    throw Error("cannot write '" + path_ + "': " + std::strerror(errno) +
                " (does the directory exist and is it writable?)");
  }
  temp_path_ = name.data();
  // mkstemp creates 0600; the output gets the mode a plain open(O_CREAT, 0666) would
  // give a new file, as users expect of an output.
  if (::fchmod(fd, 0666 & ~current_umask()) != 0) {
    const int error = errno;
    ::close(fd);
    ::unlink(temp_path_.c_str());
    throw Error("cannot write '" + path_ + "': " + std::strerror(error));
  }
  stream_ = ::fdopen(fd, "wb");
  if (!stream_) {
    ::close(fd);
    ::unlink(temp_path_.c_str());
    throw Error("cannot write '" + path_ + "'");
  }
}

AtomicFile::~AtomicFile() {
  if (stream_) std::fclose(stream_);
  if (!committed_) ::unlink(temp_path_.c_str());
}

void AtomicFile::write(const void* data, size_t bytes) {
  if (bytes && std::fwrite(data, 1, bytes, stream_) != bytes) {
    throw Error("write to '" + path_ + "' failed: " + std::strerror(errno));
  }
}

void AtomicFile::commit() {
  bool ok = std::fflush(stream_) == 0 && ::fsync(::fileno(stream_)) == 0;
  ok = (std::fclose(stream_) == 0) && ok;
  stream_ = nullptr;
  if (!ok) throw Error("write to '" + path_ + "' failed: " + std::strerror(errno));
  if (std::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    throw Error("cannot rename into '" + path_ + "': " + std::strerror(errno));
  }
  committed_ = true;
}

void write_file_atomically(const std::string& path, const std::string& contents) {
  AtomicFile file(path);
  file.write(contents.data(), contents.size());
  file.commit();
}

}  // namespace sam2rt
