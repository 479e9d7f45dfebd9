#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sam2rt {

// One stored (uncompressed) record of a zip archive.
struct ZipEntry {
  std::string name;
  uint64_t header_offset = 0;  // of its local file header
  uint64_t data_offset = 0;    // of its first data byte
  uint64_t size = 0;           // data bytes
  uint32_t crc32 = 0;          // as declared in the central directory
};

// A read-only view of a zip archive held in memory (typically a memory-mapped
// torch.save checkpoint). Only what PyTorch writes is accepted: stored
// entries, optional ZIP64 records, one disk. Every offset and size is checked
// against the buffer on construction, so entry data can be used without
// further checks. The caller keeps the buffer alive for the archive's life.
class ZipArchive {
 public:
  // `origin` prefixes every error message, e.g. "checkpoint 'sam.pt'".
  ZipArchive(std::span<const uint8_t> bytes, std::string origin);

  const std::vector<ZipEntry>& entries() const { return entries_; }
  // nullptr when there is no entry of that exact name.
  const ZipEntry* find(std::string_view name) const;
  // Throws Error naming the missing entry.
  const ZipEntry& at(std::string_view name) const;
  std::span<const uint8_t> data(const ZipEntry& entry) const;
  // Throws Error when the entry's data does not match its declared CRC-32.
  void verify_crc(const ZipEntry& entry) const;

 private:
  std::span<const uint8_t> bytes_;
  std::string origin_;
  std::vector<ZipEntry> entries_;  // sorted by name
};

// The CRC-32 of zip (IEEE 802.3, reflected, as zlib's crc32).
uint32_t zip_crc32(std::span<const uint8_t> bytes);

}  // namespace sam2rt
