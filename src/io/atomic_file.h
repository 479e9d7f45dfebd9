#pragma once

#include <cstdio>
#include <string>

namespace sam2rt {

// Writes an output file so that readers only ever see the old file or the
// complete new one: data goes to a temporary file beside the target, which is
// renamed over it on commit(). Destroying an uncommitted AtomicFile removes the
// temporary and leaves any existing target untouched.
class AtomicFile {
 public:
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  std::FILE* stream() { return stream_; }
  void write(const void* data, size_t bytes);
  void commit();

 private:
  std::string path_;
  std::string temp_path_;
  std::FILE* stream_ = nullptr;
  bool committed_ = false;
};

// Convenience for small outputs (JSON, text).
void write_file_atomically(const std::string& path, const std::string& contents);

}  // namespace sam2rt
