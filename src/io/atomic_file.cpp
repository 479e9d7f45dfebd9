#include "io/atomic_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/error.h"

namespace sam2rt {

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
