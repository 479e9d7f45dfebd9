#include "io/zip_archive.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "io/printable_text.h"

namespace sam2rt {

namespace {

constexpr uint32_t kLocalHeaderSignature = 0x04034b50;
constexpr uint32_t kCentralHeaderSignature = 0x02014b50;
constexpr uint32_t kEndSignature = 0x06054b50;
constexpr uint32_t kZip64EndSignature = 0x06064b50;
constexpr uint32_t kZip64LocatorSignature = 0x07064b50;
constexpr size_t kLocalHeaderSize = 30;
constexpr size_t kCentralHeaderSize = 46;
constexpr size_t kEndSize = 22;
constexpr size_t kZip64EndSize = 56;
constexpr size_t kZip64LocatorSize = 20;
constexpr size_t kMaxCommentSize = 0xffff;
constexpr uint16_t kZip64ExtraId = 0x0001;

uint16_t le16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t le32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}
uint64_t le64(const uint8_t* p) { return le32(p) | (static_cast<uint64_t>(le32(p + 4)) << 32); }

std::string num(uint64_t value) { return std::to_string(value); }

// Entry names come from the file: quoted printable, so errors stay one line.
std::string quoted(std::string_view name) { return "zip entry '" + printable(name) + "'"; }

// Where the central directory lies, from the (ZIP64) end records.
struct Directory {
  uint64_t offset = 0;
  uint64_t size = 0;
  uint64_t entries = 0;
  uint64_t area_end = 0;  // the first byte after the central directory's allowed area
};

// The values an entry's ZIP64 extra field may widen, each present only when its
// 32-bit (16-bit for the disk) central-directory field is saturated.
struct WideFields {
  uint64_t size;
  uint64_t compressed_size;
  uint64_t header_offset;
  uint32_t disk;
};

}  // namespace

// zlib's implementation is about ten times faster than a byte-wise table,
// which matters when every record of a gigabyte checkpoint is verified.
uint32_t zip_crc32(std::span<const uint8_t> bytes) {
  constexpr size_t kChunk = size_t{1} << 30;  // zlib takes 32-bit lengths
  uLong crc = crc32(0L, Z_NULL, 0);
  for (size_t pos = 0; pos < bytes.size(); pos += kChunk) {
    const size_t length = std::min(kChunk, bytes.size() - pos);
    crc = crc32(crc, bytes.data() + pos, static_cast<uInt>(length));
  }
  return static_cast<uint32_t>(crc);
}

namespace {

class DirectoryParser {
 public:
  DirectoryParser(std::span<const uint8_t> bytes, const std::string& origin) : bytes_(bytes), origin_(origin) {}

  Directory locate() const {
    const uint64_t size = bytes_.size();
    if (size < kEndSize) {
      fail("file is " + num(size) + " bytes, too short to be a zip archive (empty or truncated?)");
    }
    const uint8_t* base = bytes_.data();
    // The end record sits at the very end, followed only by its comment.
    const uint64_t lowest = size - kEndSize > kMaxCommentSize ? size - kEndSize - kMaxCommentSize : 0;
    uint64_t end_pos = size;
    for (uint64_t pos = size - kEndSize + 1; pos-- > lowest;) {
      if (le32(base + pos) == kEndSignature && pos + kEndSize + le16(base + pos + 20) == size) {
        end_pos = pos;
        break;
      }
    }
    if (end_pos == size) {
      fail("no zip end-of-central-directory record (the file is truncated or not a zip archive)");
    }
    const uint8_t* end = base + end_pos;
    if (le16(end + 4) != 0 || le16(end + 6) != 0 || le16(end + 8) != le16(end + 10)) {
      fail("zip archive spans several disks, which torch.save never writes");
    }
    Directory dir;
    dir.entries = le16(end + 10);
    dir.size = le32(end + 12);
    dir.offset = le32(end + 16);
    dir.area_end = end_pos;

    if (end_pos >= kZip64LocatorSize && le32(base + end_pos - kZip64LocatorSize) == kZip64LocatorSignature) {
      const uint8_t* locator = base + end_pos - kZip64LocatorSize;
      const uint64_t record_pos = le64(locator + 8);
      if (le32(locator + 4) != 0 || le32(locator + 16) > 1) {
        fail("zip archive spans several disks, which torch.save never writes");
      }
      const uint64_t locator_pos = end_pos - kZip64LocatorSize;
      if (record_pos > locator_pos || locator_pos - record_pos < kZip64EndSize) {
        fail("ZIP64 end record offset " + num(record_pos) + " lies outside the file (truncated or corrupted)");
      }
      const uint8_t* record = base + record_pos;
      if (le32(record) != kZip64EndSignature) {
        fail("ZIP64 end record at offset " + num(record_pos) + " has a bad signature (corrupted file)");
      }
      if (le32(record + 16) != 0 || le32(record + 20) != 0 || le64(record + 24) != le64(record + 32)) {
        fail("zip archive spans several disks, which torch.save never writes");
      }
      dir.entries = le64(record + 32);
      dir.size = le64(record + 40);
      dir.offset = le64(record + 48);
      dir.area_end = record_pos;
    }
    if (dir.offset > dir.area_end || dir.size > dir.area_end - dir.offset) {
      fail("central directory (" + num(dir.size) + " bytes at offset " + num(dir.offset) +
           ") lies outside the file of " + num(size) + " bytes (truncated or corrupted)");
    }
    if (dir.entries > dir.size / kCentralHeaderSize) {
      fail("central directory claims " + num(dir.entries) + " entries but has only " + num(dir.size) +
           " bytes (corrupted)");
    }
    return dir;
  }

  std::vector<ZipEntry> read_entries(const Directory& dir) const {
    std::vector<ZipEntry> entries;
    entries.reserve(dir.entries);
    const uint8_t* base = bytes_.data();
    const uint64_t dir_end = dir.offset + dir.size;
    uint64_t pos = dir.offset;
    for (uint64_t index = 0; index < dir.entries; ++index) {
      const std::string where = "central directory entry " + num(index);
      if (dir_end - pos < kCentralHeaderSize) fail(where + " runs past the end of the directory (corrupted)");
      const uint8_t* h = base + pos;
      if (le32(h) != kCentralHeaderSignature) {
        fail(where + " at offset " + num(pos) + " has a bad signature (corrupted central directory)");
      }
      const uint16_t flags = le16(h + 8);
      const uint16_t method = le16(h + 10);
      const uint64_t name_len = le16(h + 28);
      const uint64_t extra_len = le16(h + 30);
      const uint64_t comment_len = le16(h + 32);
      if (dir_end - pos - kCentralHeaderSize < name_len + extra_len + comment_len) {
        fail(where + " runs past the end of the directory (corrupted)");
      }
      ZipEntry entry;
      entry.name.assign(reinterpret_cast<const char*>(h + kCentralHeaderSize), name_len);
      entry.crc32 = le32(h + 16);
      WideFields wide{le32(h + 24), le32(h + 20), le32(h + 42), le16(h + 34)};
      read_zip64_extra(h + kCentralHeaderSize + name_len, extra_len, entry.name, wide);
      const std::string named = quoted(entry.name);
      if (flags & 0x1) fail(named + " is encrypted; only plain stored entries are supported");
      if (method != 0) {
        fail(named + " is compressed (method " + num(method) +
             "); only stored entries are supported, as torch.save writes them");
      }
      if (wide.compressed_size != wide.size) {
        fail(named + " is stored but declares " + num(wide.compressed_size) + " compressed and " + num(wide.size) +
             " uncompressed bytes (corrupted)");
      }
      if (wide.disk != 0) fail(named + " lies on another disk of a multi-disk archive");
      entry.size = wide.size;
      entry.header_offset = wide.header_offset;
      entry.data_offset = locate_data(entry, method, dir.offset);
      entries.push_back(std::move(entry));
      pos += kCentralHeaderSize + name_len + extra_len + comment_len;
    }
    if (pos != dir_end) {
      fail("central directory holds " + num(pos - dir.offset) + " bytes of entries but declares " + num(dir.size) +
           " (corrupted)");
    }
    check_disjoint(entries);
    return entries;
  }

  [[noreturn]] void fail(const std::string& problem) const { throw Error(origin_ + ": " + problem); }

 private:
  void read_zip64_extra(const uint8_t* extra, uint64_t length, const std::string& name, WideFields& wide) const {
    uint64_t pos = 0;
    while (length - pos >= 4) {
      const uint16_t id = le16(extra + pos);
      const uint64_t field_len = le16(extra + pos + 2);
      pos += 4;
      if (field_len > length - pos) fail(quoted(name) + " has a malformed extra field (corrupted)");
      if (id == kZip64ExtraId) {
        const uint8_t* field = extra + pos;
        uint64_t used = 0;
        auto widen = [&](uint64_t& value) {
          if (value != 0xffffffffu) return;
          if (field_len - used < 8) fail(quoted(name) + " has a truncated ZIP64 extra field (corrupted)");
          value = le64(field + used);
          used += 8;
        };
        widen(wide.size);
        widen(wide.compressed_size);
        widen(wide.header_offset);
        if (wide.disk == 0xffff) {
          if (field_len - used < 4) fail(quoted(name) + " has a truncated ZIP64 extra field (corrupted)");
          wide.disk = le32(field + used);
        }
      }
      pos += field_len;
    }
  }

  // Checks the local header against the central directory and returns where
  // the data starts; local headers and data must lie before the directory.
  uint64_t locate_data(const ZipEntry& entry, uint16_t method, uint64_t area_end) const {
    const std::string named = quoted(entry.name);
    const uint64_t at = entry.header_offset;
    if (at > area_end || area_end - at < kLocalHeaderSize) {
      fail(named + " has its local header at offset " + num(at) + ", outside the data area of " + num(area_end) +
           " bytes (truncated or corrupted)");
    }
    const uint8_t* h = bytes_.data() + at;
    if (le32(h) != kLocalHeaderSignature) {
      fail(named + " has a bad local header signature at offset " + num(at) + " (corrupted)");
    }
    const uint64_t name_len = le16(h + 26);
    const uint64_t extra_len = le16(h + 28);
    if (area_end - at - kLocalHeaderSize < name_len + extra_len) {
      fail(named + " has a local header that runs past the data area (truncated or corrupted)");
    }
    if (name_len != entry.name.size() || std::memcmp(h + kLocalHeaderSize, entry.name.data(), name_len) != 0) {
      fail(named + " has a local header naming a different entry (corrupted)");
    }
    if (le16(h + 8) != method) fail(named + " has a local header with a different method (corrupted)");
    const uint64_t data_offset = at + kLocalHeaderSize + name_len + extra_len;
    if (entry.size > area_end - data_offset) {
      fail(named + " data (" + num(entry.size) + " bytes at offset " + num(data_offset) +
           ") runs past the end of the data area at " + num(area_end) + " of " + num(bytes_.size()) +
           " bytes (truncated or corrupted)");
    }
    return data_offset;
  }

  void check_disjoint(const std::vector<ZipEntry>& entries) const {
    std::vector<const ZipEntry*> by_offset;
    by_offset.reserve(entries.size());
    for (const ZipEntry& e : entries) by_offset.push_back(&e);
    std::sort(by_offset.begin(), by_offset.end(),
              [](const ZipEntry* a, const ZipEntry* b) { return a->header_offset < b->header_offset; });
    // Sorted by start and every record is non-empty, so any overlap shows up
    // between neighbours.
    for (size_t i = 1; i < by_offset.size(); ++i) {
      const ZipEntry& prev = *by_offset[i - 1];
      const ZipEntry& next = *by_offset[i];
      if (next.header_offset < prev.data_offset + prev.size) {
        fail("zip entries '" + printable(prev.name) + "' and '" + printable(next.name) +
             "' overlap (corrupted or hostile archive)");
      }
    }
  }

  std::span<const uint8_t> bytes_;
  const std::string& origin_;
};

}  // namespace

ZipArchive::ZipArchive(std::span<const uint8_t> bytes, std::string origin)
    : bytes_(bytes), origin_(std::move(origin)) {
  DirectoryParser parser(bytes_, origin_);
  entries_ = parser.read_entries(parser.locate());
  std::sort(entries_.begin(), entries_.end(), [](const ZipEntry& a, const ZipEntry& b) { return a.name < b.name; });
  for (size_t i = 1; i < entries_.size(); ++i) {
    if (entries_[i].name == entries_[i - 1].name) {
      parser.fail(quoted(entries_[i].name) + " appears twice (corrupted or hostile archive)");
    }
  }
}

const ZipEntry* ZipArchive::find(std::string_view name) const {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), name,
                             [](const ZipEntry& e, std::string_view n) { return e.name < n; });
  return it != entries_.end() && it->name == name ? &*it : nullptr;
}

const ZipEntry& ZipArchive::at(std::string_view name) const {
  const ZipEntry* entry = find(name);
  if (!entry) throw Error(origin_ + ": zip archive has no entry '" + printable(name) + "'");
  return *entry;
}

std::span<const uint8_t> ZipArchive::data(const ZipEntry& entry) const {
  return bytes_.subspan(entry.data_offset, entry.size);
}

void ZipArchive::verify_crc(const ZipEntry& entry) const {
  const uint32_t actual = zip_crc32(data(entry));
  if (actual != entry.crc32) {
    throw Error(origin_ + ": " + quoted(entry.name) + " fails its CRC-32 check (the file is corrupted)");
  }
}

}  // namespace sam2rt
