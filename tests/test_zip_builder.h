#pragma once

// Test-only writer of small zip archives shaped like torch.save's, with knobs
// to make them wrong in specific ways. Hostile inputs are built at test time so
// no binary files live in the repository.

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "io/zip_archive.h"

namespace sam2rt::testing {

using Bytes = std::vector<uint8_t>;

inline Bytes to_bytes(const std::string& text) { return Bytes(text.begin(), text.end()); }

struct ZipBuilderEntry {
  std::string name;
  Bytes data;
  uint16_t method = 0;          // 8 declares deflate (the bytes stay as given)
  int64_t declared_size = -1;   // >= 0: central directory claims this many bytes
};

struct BuiltZip {
  Bytes bytes;
  uint64_t directory_offset = 0;
  std::vector<uint64_t> directory_entry_offsets;
  std::vector<uint64_t> data_offsets;
};

class ZipBuilder {
 public:
  ZipBuilderEntry& add(std::string name, Bytes data) {
    entries_.push_back({std::move(name), std::move(data)});
    return entries_.back();
  }
  // torch.save pads every record to 64 bytes and defers sizes to data descriptors.
  ZipBuilder& alignment(uint64_t bytes) {
    alignment_ = bytes;
    return *this;
  }
  ZipBuilder& data_descriptors(bool on) {
    data_descriptors_ = on;
    return *this;
  }
  // Saturates the 32-bit fields and stores the real values in ZIP64 records.
  ZipBuilder& zip64(bool on) {
    zip64_ = on;
    return *this;
  }

  BuiltZip build() const {
    BuiltZip out;
    Bytes& b = out.bytes;
    std::vector<uint64_t> header_offsets;
    for (const ZipBuilderEntry& e : entries_) {
      header_offsets.push_back(b.size());
      const uint64_t before_extra = b.size() + 30 + e.name.size();
      uint64_t padding = 0;
      if (alignment_ > 1) {
        padding = (alignment_ - (before_extra + 4) % alignment_) % alignment_;
      }
      const uint32_t crc = zip_crc32(e.data);
      put32(b, 0x04034b50);
      put16(b, 20);
      put16(b, data_descriptors_ ? 0x0808 : 0x0800);
      put16(b, e.method);
      put16(b, 0);
      put16(b, 0);
      put32(b, data_descriptors_ ? 0 : crc);
      put32(b, data_descriptors_ ? 0 : static_cast<uint32_t>(e.data.size()));
      put32(b, data_descriptors_ ? 0 : static_cast<uint32_t>(e.data.size()));
      put16(b, static_cast<uint16_t>(e.name.size()));
      put16(b, static_cast<uint16_t>(alignment_ > 1 ? padding + 4 : 0));
      b.insert(b.end(), e.name.begin(), e.name.end());
      if (alignment_ > 1) {
        put16(b, 0x4246);  // torch's "FB" padding field
        put16(b, static_cast<uint16_t>(padding));
        b.insert(b.end(), padding, 'Z');
      }
      out.data_offsets.push_back(b.size());
      b.insert(b.end(), e.data.begin(), e.data.end());
      if (data_descriptors_) {
        put32(b, 0x08074b50);
        put32(b, crc);
        put32(b, static_cast<uint32_t>(e.data.size()));
        put32(b, static_cast<uint32_t>(e.data.size()));
      }
    }
    out.directory_offset = b.size();
    for (size_t i = 0; i < entries_.size(); ++i) {
      const ZipBuilderEntry& e = entries_[i];
      out.directory_entry_offsets.push_back(b.size());
      const uint64_t size = e.declared_size >= 0 ? static_cast<uint64_t>(e.declared_size) : e.data.size();
      put32(b, 0x02014b50);
      put16(b, 45);
      put16(b, 45);
      put16(b, data_descriptors_ ? 0x0808 : 0x0800);
      put16(b, e.method);
      put16(b, 0);
      put16(b, 0);
      put32(b, zip_crc32(e.data));
      put32(b, zip64_ ? 0xffffffffu : static_cast<uint32_t>(size));
      put32(b, zip64_ ? 0xffffffffu : static_cast<uint32_t>(size));
      put16(b, static_cast<uint16_t>(e.name.size()));
      put16(b, zip64_ ? 28 : 0);
      put16(b, 0);
      put16(b, 0);
      put16(b, 0);
      put32(b, 0);
      put32(b, zip64_ ? 0xffffffffu : static_cast<uint32_t>(header_offsets[i]));
      b.insert(b.end(), e.name.begin(), e.name.end());
      if (zip64_) {
        put16(b, 0x0001);
        put16(b, 24);
        put64(b, size);
        put64(b, size);
        put64(b, header_offsets[i]);
      }
    }
    const uint64_t directory_size = b.size() - out.directory_offset;
    if (zip64_) {
      const uint64_t record = b.size();
      put32(b, 0x06064b50);
      put64(b, 44);
      put16(b, 45);
      put16(b, 45);
      put32(b, 0);
      put32(b, 0);
      put64(b, entries_.size());
      put64(b, entries_.size());
      put64(b, directory_size);
      put64(b, out.directory_offset);
      put32(b, 0x07064b50);
      put32(b, 0);
      put64(b, record);
      put32(b, 1);
    }
    put32(b, 0x06054b50);
    put16(b, 0);
    put16(b, 0);
    put16(b, zip64_ ? 0xffff : static_cast<uint16_t>(entries_.size()));
    put16(b, zip64_ ? 0xffff : static_cast<uint16_t>(entries_.size()));
    put32(b, zip64_ ? 0xffffffffu : static_cast<uint32_t>(directory_size));
    put32(b, zip64_ ? 0xffffffffu : static_cast<uint32_t>(out.directory_offset));
    put16(b, 0);
    return out;
  }

 private:
  static void put16(Bytes& b, uint64_t v) {
    for (int i = 0; i < 2; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  static void put32(Bytes& b, uint64_t v) {
    for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  static void put64(Bytes& b, uint64_t v) {
    for (int i = 0; i < 8; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }

  std::vector<ZipBuilderEntry> entries_;
  uint64_t alignment_ = 64;
  bool data_descriptors_ = true;
  bool zip64_ = false;
};

// A scratch directory for one test, removed with everything in it afterwards.
// Unique per process and object, since ctest runs tests in parallel.
class TempDir {
 public:
  TempDir() {
    static int counter = 0;
    path_ = std::filesystem::temp_directory_path() /
            ("sam2rt_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

  std::string write(const std::string& name, const Bytes& bytes) const {
    const auto path = path_ / name;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    return path.string();
  }

 private:
  std::filesystem::path path_;
};

inline Bytes read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace sam2rt::testing
