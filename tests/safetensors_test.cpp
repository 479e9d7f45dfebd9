#include "io/safetensors.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "test_zip_builder.h"

namespace sam2rt {
namespace {

using testing::Bytes;
using testing::TempDir;

// A safetensors file: 8-byte little-endian header length, JSON header, data.
Bytes safetensors_bytes(const std::string& header, const Bytes& data, uint64_t declared_length) {
  Bytes b;
  for (int i = 0; i < 8; ++i) b.push_back(static_cast<uint8_t>(declared_length >> (8 * i)));
  b.insert(b.end(), header.begin(), header.end());
  b.insert(b.end(), data.begin(), data.end());
  return b;
}
Bytes safetensors_bytes(const std::string& header, const Bytes& data) {
  return safetensors_bytes(header, data, header.size());
}

void expect_read_error(const Bytes& file, const std::string& fragment) {
  TempDir dir;
  const std::string path = dir.write("t.safetensors", file);
  try {
    read_safetensors(path);
    FAIL() << "no error; expected one containing: " << fragment;
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(fragment), std::string::npos) << message;
    EXPECT_EQ(message.rfind("safetensors '" + path + "': ", 0), 0u) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

TEST(Safetensors, RoundTripKeepsShapesValuesAndMetadata) {
  Tensor a({2, 3});
  for (int64_t i = 0; i < a.numel(); ++i) a[i] = std::ldexp(static_cast<float>(i) - 2.5f, static_cast<int>(i) - 3);
  a[5] = -0.0f;
  const Tensor scalar = Tensor::filled({}, 7.25f);
  const Tensor empty({0, 4});
  const Tensor b = Tensor::filled({5}, 1e-30f);
  TempDir dir;
  const std::string path = dir.write("rt.safetensors", {});
  write_safetensors(path, {{"a", a}, {"scalar", scalar}, {"empty", empty}, {"nested.key.b", b}},
                    {{"format", "pt"}, {"note", "round trip"}});

  const SafetensorsFile file = read_safetensors(path);
  ASSERT_EQ(file.tensors.size(), 4u);
  EXPECT_EQ(file.metadata.at("format"), "pt");
  EXPECT_EQ(file.metadata.at("note"), "round trip");
  for (const auto& [name, original] : std::vector<std::pair<std::string, Tensor>>{
           {"a", a}, {"scalar", scalar}, {"empty", empty}, {"nested.key.b", b}}) {
    const Tensor& got = file.tensors.at(name);
    EXPECT_EQ(got.shape(), original.shape()) << name;
    ASSERT_EQ(got.numel(), original.numel()) << name;
    EXPECT_EQ(std::memcmp(got.data(), original.data(), static_cast<size_t>(got.numel()) * 4), 0) << name;
  }
}

// An empty tensor shares its offset with the next tensor's start; that is not an overlap.
TEST(Safetensors, EmptyTensorsSharingAnOffsetDoNotOverlap) {
  const Tensor empty({0});
  const Tensor values = Tensor::filled({3}, 2.0f);
  TempDir dir;
  const std::string path = dir.write("e.safetensors", {});
  write_safetensors(path, {{"z_empty", empty}, {"a", values}, {"m_empty", Tensor({2, 0})}}, {});
  const SafetensorsFile file = read_safetensors(path);
  EXPECT_EQ(file.tensors.at("z_empty").shape(), (Shape{0}));
  EXPECT_EQ(file.tensors.at("m_empty").shape(), (Shape{2, 0}));
  EXPECT_EQ(file.tensors.at("a")[2], 2.0f);
}

// Found by the robustness catalogue: a file holding only empty tensors has an
// empty data section, and their non-zero dimensions used to be compared with it.
TEST(Safetensors, EmptyTensorsNeedNoData) {
  TempDir dir;
  const std::string path = dir.write("e.safetensors", {});
  write_safetensors(path, {{"a", Tensor({0, 4})}, {"b", Tensor({3, 0})}}, {});
  const SafetensorsFile file = read_safetensors(path);
  EXPECT_EQ(file.tensors.at("a").shape(), (Shape{0, 4}));
  EXPECT_EQ(file.tensors.at("b").shape(), (Shape{3, 0}));
  expect_read_error(
      safetensors_bytes(R"({"a":{"dtype":"F32","shape":[0,1099511627776,2],"data_offsets":[0,0]}})", {}),
      "tensor 'a' has an implausibly large shape");
}

TEST(Safetensors, WidensHalfAndBFloat16) {
  const std::vector<uint16_t> half = {0x3c00, 0xc000, 0x7bff, 0x0001, 0x03ff, 0x7c00, 0xfc00};
  const std::vector<float> half_expected = {1.0f, -2.0f, 65504.0f, 0x1p-24f, 0x1.ff8p-15f, INFINITY, -INFINITY};
  const std::vector<uint16_t> bf16 = {0x3f80, 0xc049, 0x0001, 0x8000};
  const std::vector<float> bf16_expected = {1.0f, -3.140625f, 0x1p-133f, -0.0f};
  Bytes data(2 * (half.size() + bf16.size()));
  std::memcpy(data.data(), half.data(), 2 * half.size());
  std::memcpy(data.data() + 2 * half.size(), bf16.data(), 2 * bf16.size());
  const std::string header =
      R"({"h":{"dtype":"F16","shape":[7],"data_offsets":[0,14]},)"
      R"("b":{"dtype":"BF16","shape":[2,2],"data_offsets":[14,22]}})";
  TempDir dir;
  const SafetensorsFile file = read_safetensors(dir.write("h.safetensors", safetensors_bytes(header, data)));
  const Tensor& h = file.tensors.at("h");
  const Tensor& b = file.tensors.at("b");
  ASSERT_EQ(h.shape(), (Shape{7}));
  ASSERT_EQ(b.shape(), (Shape{2, 2}));
  for (size_t i = 0; i < half.size(); ++i) EXPECT_EQ(std::memcmp(h.data() + i, &half_expected[i], 4), 0) << i;
  for (size_t i = 0; i < bf16.size(); ++i) EXPECT_EQ(std::memcmp(b.data() + i, &bf16_expected[i], 4), 0) << i;
}

TEST(Safetensors, ReadsMisalignedFloat32ByCopy) {
  const float values[2] = {1.5f, -4.0f};
  Bytes data(9, 0);
  std::memcpy(data.data() + 1, values, 8);
  const std::string header = R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[1,9]}})";
  ASSERT_NE((8 + header.size() + 1) % 4, 0u);
  TempDir dir;
  const SafetensorsFile file = read_safetensors(dir.write("m.safetensors", safetensors_bytes(header, data)));
  EXPECT_EQ(file.tensors.at("x")[0], 1.5f);
  EXPECT_EQ(file.tensors.at("x")[1], -4.0f);
}

TEST(Safetensors, RefusesHostileHeaders) {
  const Bytes data(16, 0);
  expect_read_error({}, "too short to hold a header");
  expect_read_error(safetensors_bytes("{}", {}, 1000), "header length 1000 exceeds the file size");
  expect_read_error(safetensors_bytes("{}", {}, ~uint64_t{0}), "exceeds the file size");
  expect_read_error(safetensors_bytes(R"({"a": )", data), "header is not valid JSON");
  expect_read_error(safetensors_bytes("[1, 2]", data), "header is not a JSON object");
  expect_read_error(safetensors_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,24]}})", data),
                    "tensor 'a' data_offsets [8, 24] lie outside the data section (16 bytes)");
  expect_read_error(safetensors_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", data),
                    "lie outside the data section");
  expect_read_error(safetensors_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                      R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                                      data),
                    "tensors 'a' and 'b' overlap");
  expect_read_error(safetensors_bytes(R"({"a":{"dtype":"I64","shape":[2],"data_offsets":[0,16]}})", data),
                    "tensor 'a' has dtype I64; only F32, F16 and BF16 are supported");
  expect_read_error(safetensors_bytes(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}})", data),
                    "tensor 'a' has 16 bytes but its shape [3] and dtype F32 need 12");
  expect_read_error(safetensors_bytes(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", data),
                    "negative or non-integer dimension");
  expect_read_error(
      safetensors_bytes(R"({"a":{"dtype":"F32","shape":[65536,65536,65536],"data_offsets":[0,16]}})", data),
      "larger than the file");
  expect_read_error(safetensors_bytes(R"({"a":{"dtype":"F32","shape":[2]}})", data),
                    "missing dtype, shape or data_offsets");
  expect_read_error(safetensors_bytes(R"({"a":{"dtype":7,"shape":[2],"data_offsets":[0,8]}})", data),
                    "missing dtype, shape or data_offsets, or has the wrong type");
  expect_read_error(safetensors_bytes(R"({"__metadata__":{"k":1}})", data), "metadata value 'k' is not a string");
}

}  // namespace
}  // namespace sam2rt
