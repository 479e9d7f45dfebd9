#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sam2rt {

// A whole file mapped copy-on-write (MAP_PRIVATE, readable and writable), so
// tensors can be views into it and the kernels may still treat them as float*.
class MappedFile {
 public:
  static std::shared_ptr<MappedFile> open(const std::string& path);
  // File contents already in memory (fuzzing, tests), read as if mapped from
  // `path`, which only names the origin in error messages. Held on the heap, so
  // the address sanitizer sees every read past the end.
  static std::shared_ptr<MappedFile> from_bytes(std::vector<uint8_t> bytes, const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  MappedFile() = default;
  std::string path_;
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;
  std::vector<uint8_t> owned_;
};

}  // namespace sam2rt
