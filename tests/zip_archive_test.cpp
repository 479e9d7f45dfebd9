#include "io/zip_archive.h"

#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "test_zip_builder.h"

namespace sam2rt {
namespace {

using testing::Bytes;
using testing::to_bytes;
using testing::ZipBuilder;

std::string text_of(std::span<const uint8_t> bytes) { return std::string(bytes.begin(), bytes.end()); }

ZipBuilder three_entries() {
  ZipBuilder zip;
  zip.add("archive/data.pkl", to_bytes("pickle bytes"));
  zip.add("archive/data/0", Bytes(100, 7));
  zip.add("archive/version", to_bytes("3\n"));
  return zip;
}

// Expects constructing the archive to throw an Error whose message holds `fragment`.
void expect_zip_error(const Bytes& bytes, const std::string& fragment) {
  try {
    ZipArchive zip(bytes, "archive 't.zip'");
    FAIL() << "no error; expected one containing: " << fragment;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("archive 't.zip': ", 0), 0u) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
  }
}

TEST(ZipArchive, Crc32MatchesTheStandardCheckValue) {
  EXPECT_EQ(zip_crc32(to_bytes("123456789")), 0xcbf43926u);
  EXPECT_EQ(zip_crc32({}), 0u);
}

void expect_three_entries(const ZipArchive& zip) {
  ASSERT_EQ(zip.entries().size(), 3u);
  EXPECT_EQ(text_of(zip.data(zip.at("archive/data.pkl"))), "pickle bytes");
  EXPECT_EQ(zip.data(zip.at("archive/data/0")).size(), 100u);
  EXPECT_EQ(text_of(zip.data(zip.at("archive/version"))), "3\n");
  EXPECT_EQ(zip.find("archive/data/1"), nullptr);
  for (const ZipEntry& e : zip.entries()) EXPECT_NO_THROW(zip.verify_crc(e)) << e.name;
}

TEST(ZipArchive, ReadsTorchStyleEntriesWithDataDescriptorsAndPadding) {
  const auto built = three_entries().build();
  ZipArchive zip(built.bytes, "t");
  expect_three_entries(zip);
  EXPECT_EQ(zip.at("archive/data/0").data_offset % 64, 0u);
}

TEST(ZipArchive, ReadsPlainLocalHeaderSizes) {
  const auto built = three_entries().data_descriptors(false).alignment(0).build();
  expect_three_entries(ZipArchive(built.bytes, "t"));
}

TEST(ZipArchive, ReadsZip64Records) {
  const auto built = three_entries().zip64(true).build();
  expect_three_entries(ZipArchive(built.bytes, "t"));
}

TEST(ZipArchive, MissingEntryIsNamed) {
  const auto built = three_entries().build();
  ZipArchive zip(built.bytes, "archive 't.zip'");
  try {
    zip.at("archive/data/9");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no entry 'archive/data/9'"), std::string::npos) << e.what();
  }
}

TEST(ZipArchive, CrcMismatchIsReported) {
  auto built = three_entries().build();
  built.bytes[built.data_offsets[0]] ^= 1;
  ZipArchive zip(built.bytes, "t");
  EXPECT_THROW(zip.verify_crc(zip.at("archive/data.pkl")), Error);
}

TEST(ZipArchive, RefusesEmptyAndTruncatedArchives) {
  const auto built = three_entries().build();
  expect_zip_error({}, "too short to be a zip archive");
  for (size_t keep : {size_t{10}, built.bytes.size() / 2, built.bytes.size() - 1}) {
    const Bytes cut(built.bytes.begin(), built.bytes.begin() + static_cast<ptrdiff_t>(keep));
    expect_zip_error(cut, "truncated");
  }
}

TEST(ZipArchive, RefusesNonZipBytes) { expect_zip_error(Bytes(4096, 'x'), "not a zip archive"); }

TEST(ZipArchive, RefusesCompressedEntryNamingIt) {
  ZipBuilder zip = three_entries();
  zip.add("archive/data/1", Bytes(16, 1)).method = 8;
  expect_zip_error(zip.build().bytes, "zip entry 'archive/data/1' is compressed (method 8)");
}

TEST(ZipArchive, RefusesEntryRunningPastTheFile) {
  ZipBuilder zip = three_entries();
  zip.add("archive/data/1", Bytes(16, 1)).declared_size = 1 << 30;
  expect_zip_error(zip.build().bytes, "zip entry 'archive/data/1' data (1073741824 bytes");
  expect_zip_error(zip.build().bytes, "runs past the end");
}

TEST(ZipArchive, RefusesOverlappingEntries) {
  ZipBuilder zip;
  zip.add("a", Bytes(64, 1)).declared_size = 64 + 40;  // reaches into the next local header
  zip.add("b", Bytes(64, 2));
  expect_zip_error(zip.build().bytes, "zip entries 'a' and 'b' overlap");
}

TEST(ZipArchive, RefusesDuplicateNames) {
  ZipBuilder zip;
  zip.add("a", Bytes(8, 1));
  zip.add("a", Bytes(8, 2));
  expect_zip_error(zip.build().bytes, "zip entry 'a' appears twice");
}

TEST(ZipArchive, RefusesBitFlipsInTheCentralDirectory) {
  const auto built = three_entries().build();
  Bytes signature = built.bytes;
  signature[built.directory_entry_offsets[1]] ^= 0x04;
  expect_zip_error(signature, "central directory entry 1 at offset");

  Bytes header_offset = built.bytes;
  header_offset[built.directory_entry_offsets[0] + 45] ^= 0x40;  // high byte of the local header offset
  expect_zip_error(header_offset, "outside the data area");

  Bytes name_length = built.bytes;
  name_length[built.directory_entry_offsets[2] + 28] ^= 0x80;
  expect_zip_error(name_length, "corrupted");
}

// Every single-bit flip in the central directory and end records must either
// still parse (the flip hit a field we do not use) or throw Error: never crash,
// never read out of bounds (the sanitizer build checks the latter).
TEST(ZipArchive, SurvivesEverySingleBitFlipInTheDirectory) {
  for (bool zip64 : {false, true}) {
    const auto built = three_entries().zip64(zip64).build();
    int refused = 0;
    for (size_t at = built.directory_offset; at < built.bytes.size(); ++at) {
      for (int bit = 0; bit < 8; ++bit) {
        Bytes flipped = built.bytes;
        flipped[at] ^= static_cast<uint8_t>(1 << bit);
        try {
          ZipArchive zip(flipped, "t");
          for (const ZipEntry& e : zip.entries()) {
            ASSERT_LE(e.data_offset + e.size, flipped.size());
          }
        } catch (const Error&) {
          ++refused;
        }
      }
    }
    EXPECT_GT(refused, 0);
  }
}

}  // namespace
}  // namespace sam2rt
