#include "io/torch_checkpoint.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/checkpoint.h"
#include "io/pickle_reader.h"
#include "io/safetensors.h"
#include "model/config.h"
#include "model/synthetic_weights.h"
#include "model/weight_manifest.h"
#include "test_paths.h"
#include "test_pickle_builder.h"
#include "test_zip_builder.h"

namespace sam2rt {
namespace {

using testing::Bytes;
using testing::PickleBytes;
using testing::TempDir;
using testing::to_bytes;
using testing::ZipBuilder;

std::string micro_pt() { return testing::fixtures_dir() + "/micro/micro.pt"; }

struct TensorRecord {
  std::string key;
  std::string storage_type = "FloatStorage";
  std::string storage_key;
  int64_t storage_numel = 0;
  int64_t offset = 0;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
};

enum class Layout { kModelDict, kBareStateDict };

// The pickle of torch.save({"model": state_dict}) as torch 1.13 writes it
// (protocol 2, one memoised _rebuild_tensor_v2), optionally with the
// _metadata attribute a real nn.Module state dict carries.
Bytes torch_pickle(const std::vector<TensorRecord>& tensors, Layout layout, bool with_metadata) {
  PickleBytes p;
  p.op(0x80).op(2);
  if (layout == Layout::kModelDict) p.op('}').str("model");
  p.global("collections", "OrderedDict").op(')').op('R').op('(');
  bool rebuild_memoised = false;
  for (const TensorRecord& t : tensors) {
    p.str(t.key);
    if (rebuild_memoised) {
      p.op('h').le(0, 1);
    } else {
      p.global("torch._utils", "_rebuild_tensor_v2").op('q').le(0, 1);
      rebuild_memoised = true;
    }
    p.op('(').op('(').str("storage").global("torch", t.storage_type).str(t.storage_key).str("cpu");
    p.integer(t.storage_numel).op('t').op('Q');
    p.integer(t.offset).int_tuple(t.sizes).int_tuple(t.strides).op(0x89);
    p.global("collections", "OrderedDict").op(')').op('R').op('t').op('R');
  }
  p.op('u');
  if (with_metadata) {
    p.op('}').str("_metadata").global("collections", "OrderedDict").op(')').op('R');
    p.str("").op('}').str("version").integer(1).op('s').op('s').op('s').op('b');
  }
  if (layout == Layout::kModelDict) p.op('s');
  return p.op('.').bytes();
}

Bytes float_bytes(const std::vector<float>& values) {
  Bytes b(values.size() * 4);
  std::memcpy(b.data(), values.data(), b.size());
  return b;
}

std::vector<float> iota_floats(int n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i) + 0.5f;
  return v;
}

struct Storage {
  std::string key;
  Bytes bytes;
};

ZipBuilder checkpoint_zip(const std::string& folder, const Bytes& pickle, const std::vector<Storage>& storages) {
  ZipBuilder zip;
  zip.add(folder + "/data.pkl", pickle);
  for (const Storage& s : storages) zip.add(folder + "/data/" + s.key, s.bytes);
  zip.add(folder + "/version", to_bytes("3\n"));
  return zip;
}

// One float32 tensor "w" of shape [2, 3] over a 6-element storage.
TensorRecord simple_tensor() { return {"w", "FloatStorage", "0", 6, 0, {2, 3}, {3, 1}}; }

void expect_error(const std::function<void()>& load, const std::string& fragment) {
  try {
    load();
    FAIL() << "no error; expected one containing: " << fragment;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
  }
}

void expect_load_error(const Bytes& file_bytes, const std::string& fragment) {
  TempDir dir;
  const std::string path = dir.write("x.pt", file_bytes);
  expect_error([&] { load_torch_checkpoint(path); }, fragment);
  expect_error([&] { load_torch_checkpoint(path); }, "checkpoint '" + path + "': ");
}

void expect_pickle_error(const Bytes& pickle, const std::string& fragment) {
  expect_load_error(checkpoint_zip("x", pickle, {{"0", float_bytes(iota_floats(6))}}).build().bytes, fragment);
}

TEST(TorchCheckpoint, LoadsMicroFixtureBitExact) {
  const auto start = std::chrono::steady_clock::now();
  const WeightMap weights = load_torch_checkpoint(micro_pt());
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::printf("micro.pt: %zu tensors loaded in %.2f ms\n", weights.size(), ms);
  ASSERT_EQ(weights.size(), 347u);
  for (const auto& [key, tensor] : weights.all()) {
    const Tensor expected = generate_weight(key, tensor.shape(), 0);
    ASSERT_EQ(std::memcmp(tensor.data(), expected.data(), static_cast<size_t>(tensor.numel()) * 4), 0) << key;
  }
  const ModelConfig config = load_config_yaml(testing::fixtures_dir() + "/micro/sam2.1_micro.yaml");
  EXPECT_NO_THROW(validate_weights(weights, config));
  for (const WeightSpec& spec : image_path_weights(config)) EXPECT_EQ(weights.at(spec.key).shape(), spec.shape);
}

TEST(TorchCheckpoint, LoadCheckpointDispatchesZipToTorch) {
  const WeightMap weights = load_checkpoint(micro_pt());
  EXPECT_EQ(weights.size(), 347u);
  EXPECT_TRUE(weights.contains("image_encoder.trunk.patch_embed.proj.weight"));
}

TEST(TorchCheckpoint, TensorsOutliveTheirFileMapping) {
  Tensor kept;
  {
    const WeightMap weights = load_torch_checkpoint(micro_pt());
    kept = weights.at("no_mem_embed");
  }
  const Tensor expected = generate_weight("no_mem_embed", kept.shape(), 0);
  EXPECT_EQ(std::memcmp(kept.data(), expected.data(), static_cast<size_t>(kept.numel()) * 4), 0);
}

TEST(TorchCheckpoint, RefusesEmptyAndTruncatedFiles) {
  const Bytes micro = testing::read_whole_file(micro_pt());
  ASSERT_GT(micro.size(), 1000u);
  expect_load_error({}, "file is empty");
  for (size_t keep : {size_t{10}, micro.size() / 2, micro.size() - 1}) {
    expect_load_error(Bytes(micro.begin(), micro.begin() + static_cast<ptrdiff_t>(keep)), "truncated");
  }
}

TEST(TorchCheckpoint, RefusesBitFlippedCentralDirectory) {
  Bytes micro = testing::read_whole_file(micro_pt());
  uint32_t directory = 0;  // micro.pt is small, so the classic end record holds the real offset
  std::memcpy(&directory, micro.data() + micro.size() - 22 + 16, 4);
  micro[directory + 1] ^= 0x10;  // signature of the first directory entry
  expect_load_error(micro, "central directory entry 0 at offset " + std::to_string(directory) +
                               " has a bad signature");
}

TEST(TorchCheckpoint, RefusesBitFlipInThePickle) {
  Bytes micro = testing::read_whole_file(micro_pt());
  micro[64 + 100] ^= 0x01;  // micro/data.pkl starts at byte 64 (torch aligns records to 64)
  expect_load_error(micro, "zip entry 'micro/data.pkl' fails its CRC-32 check");
}

TEST(TorchCheckpoint, ReadsProtocol2StateDictWithMetadata) {
  TempDir dir;
  const Bytes pickle = torch_pickle({simple_tensor()}, Layout::kModelDict, true);
  const std::string path = dir.write("m.pt", checkpoint_zip("archive", pickle, {{"0", float_bytes(iota_floats(6))}})
                                                 .build()
                                                 .bytes);
  const WeightMap weights = load_torch_checkpoint(path);
  ASSERT_EQ(weights.size(), 1u);
  EXPECT_EQ(weights.at("w").shape(), (Shape{2, 3}));
  EXPECT_EQ(std::vector<float>(weights.at("w").begin(), weights.at("w").end()), iota_floats(6));
}

TEST(TorchCheckpoint, ReadsBareStateDict) {
  TempDir dir;
  const Bytes pickle = torch_pickle({simple_tensor()}, Layout::kBareStateDict, false);
  const std::string path =
      dir.write("m.pt", checkpoint_zip("m", pickle, {{"0", float_bytes(iota_floats(6))}}).build().bytes);
  EXPECT_EQ(load_torch_checkpoint(path).size(), 1u);
}

TEST(TorchCheckpoint, ReadsProtocol4Opcodes) {
  // FRAME, SHORT_BINUNICODE, MEMOIZE, STACK_GLOBAL, BINGET, TUPLE2, SETITEM.
  PickleBytes p;
  p.op(0x80).op(4).op(0x95).le(0, 8);
  p.op('}').op(0x94).short_str("model").op(0x94);                                        // memo 0, 1
  p.short_str("collections").short_str("OrderedDict").op(0x93).op(0x94).op(')').op('R');  // memo 2
  p.op(0x94).short_str("b");                                                              // memo 3
  p.short_str("torch._utils").short_str("_rebuild_tensor_v2").op(0x93).op(0x94);          // memo 4
  p.op('(').op('(');
  p.short_str("storage").short_str("torch").short_str("FloatStorage").op(0x93);
  p.short_str("0").short_str("cpu").integer(6).op('t').op('Q');
  p.integer(2).integer(2).integer(2).op(0x86).integer(2).integer(1).op(0x86).op(0x89);
  p.op('h').le(2, 1).op(')').op('R');  // backward_hooks = OrderedDict()
  p.op('t').op('R');
  p.op('s').op('s').op('.');

  const PickleGraph graph = read_torch_pickle(p.bytes(), "t");
  ASSERT_EQ(graph[graph.root].kind, PickleKind::kDict);

  TempDir dir;
  const std::string path =
      dir.write("p4.pt", checkpoint_zip("p4", p.bytes(), {{"0", float_bytes(iota_floats(6))}}).build().bytes);
  const WeightMap weights = load_torch_checkpoint(path);
  const Tensor& b = weights.at("b");
  EXPECT_EQ(b.shape(), (Shape{2, 2}));
  EXPECT_EQ(std::vector<float>(b.begin(), b.end()), (std::vector<float>{2.5f, 3.5f, 4.5f, 5.5f}));
}

TEST(TorchCheckpoint, GathersStridedAndOffsetTensors) {
  const std::vector<float> storage = iota_floats(24);
  std::vector<TensorRecord> tensors = {
      {"transposed", "FloatStorage", "0", 24, 1, {3, 4}, {1, 3}},  // a .t() view of a 4x3 block
      {"expanded", "FloatStorage", "0", 24, 5, {2, 3, 2}, {0, 4, 1}},
      {"sliced", "FloatStorage", "0", 24, 2, {2, 2}, {12, 2}},
      {"offset", "FloatStorage", "0", 24, 7, {1, 5}, {99, 1}},  // size-1 dims may have any stride
      {"repeated", "FloatStorage", "0", 24, 0, {5, 24}, {0, 1}},  // more elements than the storage
  };
  TempDir dir;
  const Bytes pickle = torch_pickle(tensors, Layout::kModelDict, false);
  const std::string path = dir.write("s.pt", checkpoint_zip("s", pickle, {{"0", float_bytes(storage)}}).build().bytes);
  const WeightMap weights = load_torch_checkpoint(path);
  for (const TensorRecord& t : tensors) {
    const Tensor& got = weights.at(t.key);
    ASSERT_EQ(got.shape(), t.sizes) << t.key;
    // Plain reference: element (i0, i1, ...) is storage[offset + sum i_d * stride_d].
    std::vector<int64_t> index(t.sizes.size(), 0);
    for (int64_t flat = 0; flat < got.numel(); ++flat) {
      int64_t rest = flat;
      int64_t source = t.offset;
      for (size_t d = t.sizes.size(); d-- > 0;) {
        source += (rest % t.sizes[d]) * t.strides[d];
        rest /= t.sizes[d];
      }
      EXPECT_EQ(got[flat], storage[static_cast<size_t>(source)]) << t.key << " element " << flat;
    }
  }
}

TEST(TorchCheckpoint, CopiesMisalignedFloatStorages) {
  std::vector<TensorRecord> tensors = {simple_tensor()};
  TempDir dir;
  ZipBuilder zip = checkpoint_zip("odd", torch_pickle(tensors, Layout::kModelDict, false),
                                  {{"0", float_bytes(iota_floats(6))}});
  zip.alignment(0);
  const auto built = zip.build();
  ASSERT_NE(built.data_offsets[1] % 4, 0u) << "the test needs a misaligned storage record";
  const WeightMap weights = load_torch_checkpoint(dir.write("odd.pt", built.bytes));
  EXPECT_EQ(std::vector<float>(weights.at("w").begin(), weights.at("w").end()), iota_floats(6));
}

TEST(TorchCheckpoint, WidensHalfAndBFloat16Storages) {
  const std::vector<uint16_t> half = {0x3c00, 0xc000, 0x7bff, 0x0001, 0x8000, 0x3555};
  const std::vector<float> half_expected = {1.0f, -2.0f, 65504.0f, 0x1p-24f, -0.0f, 0.333251953125f};
  const std::vector<uint16_t> bf16 = {0x3f80, 0xc049, 0x0000, 0x7f80};
  const std::vector<float> bf16_expected = {1.0f, -3.140625f, 0.0f, INFINITY};
  auto bytes_of = [](const std::vector<uint16_t>& v) {
    Bytes b(v.size() * 2);
    std::memcpy(b.data(), v.data(), b.size());
    return b;
  };
  std::vector<TensorRecord> tensors = {
      {"h", "HalfStorage", "0", 6, 0, {6}, {1}},
      {"b", "BFloat16Storage", "1", 4, 0, {2, 2}, {2, 1}},
      {"bt", "BFloat16Storage", "1", 4, 0, {2, 2}, {1, 2}},
  };
  TempDir dir;
  const std::string path =
      dir.write("h.pt", checkpoint_zip("h", torch_pickle(tensors, Layout::kModelDict, false),
                                       {{"0", bytes_of(half)}, {"1", bytes_of(bf16)}})
                            .build()
                            .bytes);
  const WeightMap weights = load_torch_checkpoint(path);
  const Tensor& h = weights.at("h");
  for (size_t i = 0; i < half.size(); ++i) {
    EXPECT_EQ(std::memcmp(h.data() + i, &half_expected[i], 4), 0) << i;
  }
  EXPECT_EQ(std::vector<float>(weights.at("b").begin(), weights.at("b").end()), bf16_expected);
  EXPECT_EQ(std::vector<float>(weights.at("bt").begin(), weights.at("bt").end()),
            (std::vector<float>{1.0f, 0.0f, -3.140625f, INFINITY}));
}

TEST(TorchCheckpoint, RefusesForbiddenGlobalOsSystem) {
  PickleBytes p;
  p.op(0x80).op(2).global("os", "system").str("touch /tmp/pwned").op(0x85).op('R').op('.');
  expect_pickle_error(p.bytes(), "pickle refers to forbidden global 'os.system'");
}

TEST(TorchCheckpoint, RefusesForbiddenGlobalsEvenWithAllowedNeighbours) {
  PickleBytes load_from_bytes;
  load_from_bytes.op(0x80).op(2).global("torch.storage", "_load_from_bytes").op('.');
  expect_pickle_error(load_from_bytes.bytes(), "forbidden global 'torch.storage._load_from_bytes'");

  PickleBytes stack_global;
  stack_global.op(0x80).op(4).short_str("builtins").short_str("eval").op(0x93).op('.');
  expect_pickle_error(stack_global.bytes(), "forbidden global 'builtins.eval'");

  PickleBytes weird_module;
  weird_module.op(0x80).op(2).raw("c__builtin__\x01\n\x7f\n").op('.');
  expect_pickle_error(weird_module.bytes(), "forbidden global '__builtin__?.?'");

  PickleBytes unterminated;
  unterminated.op(0x80).op(2).raw("ctorch").op('.');
  expect_pickle_error(unterminated.bytes(), "GLOBAL name is unterminated");
}

TEST(TorchCheckpoint, RefusesUnsupportedOpcodes) {
  PickleBytes newobj;
  newobj.op(0x80).op(2).global("collections", "OrderedDict").op(')').op(0x81).op('.');
  expect_pickle_error(newobj.bytes(), "pickle opcode 0x81 at byte 28 is not supported");

  PickleBytes inst;
  inst.op(0x80).op(2).op('(').op('i').raw("os\nsystem\n").op('.');
  expect_pickle_error(inst.bytes(), "pickle opcode 0x69");
}

TEST(TorchCheckpoint, RefusesMalformedPickles) {
  PickleBytes no_stop;
  no_stop.op(0x80).op(2).op('}');
  expect_pickle_error(no_stop.bytes(), "ends without a STOP opcode");

  PickleBytes long_string;
  long_string.op(0x80).op(2).op('X').le(0xfffffff0u, 4).raw("abc");
  expect_pickle_error(long_string.bytes(), "string of 4294967280 bytes runs past the end");

  PickleBytes underflow;
  underflow.op(0x80).op(2).op('(').op('s').op('.');
  expect_pickle_error(underflow.bytes(), "stack underflow");

  PickleBytes bad_memo;
  bad_memo.op(0x80).op(2).op('j').le(123456, 4).op('.');
  expect_pickle_error(bad_memo.bytes(), "memo entry 123456 that was never written");

  PickleBytes not_dict;
  not_dict.op(0x80).op(2).op(']').op('.');
  expect_pickle_error(not_dict.bytes(), "pickle does not hold a dict");

  PickleBytes storage_call;
  storage_call.op(0x80).op(2).global("torch", "FloatStorage").op(')').op('R').op('.');
  expect_pickle_error(storage_call.bytes(), "calls 'torch.FloatStorage'");
}

TEST(TorchCheckpoint, RefusesTensorsOutsideTheirStorage) {
  auto load_with = [](TensorRecord t, Bytes storage, const std::string& fragment) {
    expect_load_error(
        checkpoint_zip("x", torch_pickle({t}, Layout::kModelDict, false), {{"0", std::move(storage)}}).build().bytes,
        fragment);
  };
  TensorRecord past_end = simple_tensor();
  past_end.offset = 1;  // 6 elements from offset 1 in a 6-element storage
  load_with(past_end, float_bytes(iota_floats(6)),
            "tensor 'w' with offset 1, shape [2, 3] and strides [3, 1] reaches beyond its storage of 6 elements");

  TensorRecord wide_stride = simple_tensor();
  wide_stride.strides = {4, 1};
  load_with(wide_stride, float_bytes(iota_floats(6)), "reaches beyond its storage");

  TensorRecord huge_stride = simple_tensor();
  huge_stride.strides = {int64_t{1} << 62, 1};
  load_with(huge_stride, float_bytes(iota_floats(6)), "reaches beyond its storage");

  TensorRecord big_numel = simple_tensor();
  big_numel.storage_numel = 7;
  load_with(big_numel, float_bytes(iota_floats(6)), "has 24 bytes but declares 7 elements");

  load_with(simple_tensor(), Bytes(25, 0), "not a multiple of the 4-byte FloatStorage element");

  TensorRecord missing = simple_tensor();
  missing.storage_key = "9";
  load_with(missing, float_bytes(iota_floats(6)), "refers to storage record 'x/data/9', which the archive lacks");

  TensorRecord huge_shape = simple_tensor();
  huge_shape.sizes = {int64_t{1} << 40, int64_t{1} << 40};
  huge_shape.strides = {0, 0};
  load_with(huge_shape, float_bytes(iota_floats(6)), "implausibly large shape");

  TensorRecord expanded = simple_tensor();
  expanded.sizes = {int64_t{1} << 15, int64_t{1} << 15};
  expanded.strides = {0, 0};
  load_with(expanded, float_bytes(iota_floats(6)), "repeats its storage of 6 elements into shape [32768, 32768]");
}

TEST(TorchCheckpoint, RefusesZipProblemsInCheckpoints) {
  const Bytes pickle = torch_pickle({simple_tensor()}, Layout::kModelDict, false);

  ZipBuilder compressed = checkpoint_zip("x", pickle, {{"0", float_bytes(iota_floats(6))}});
  compressed.add("x/data/1", Bytes(8, 0)).method = 8;
  expect_load_error(compressed.build().bytes, "zip entry 'x/data/1' is compressed");

  ZipBuilder past_file = checkpoint_zip("x", pickle, {{"0", float_bytes(iota_floats(6))}});
  past_file.add("x/data/1", Bytes(8, 0)).declared_size = 1 << 20;
  expect_load_error(past_file.build().bytes, "runs past the end of the data area");

  ZipBuilder overlap;
  overlap.add("x/data.pkl", pickle).declared_size = static_cast<int64_t>(pickle.size()) + 70;
  overlap.add("x/data/0", float_bytes(iota_floats(6)));
  expect_load_error(overlap.build().bytes, "zip entries 'x/data.pkl' and 'x/data/0' overlap");

  ZipBuilder no_pickle;
  no_pickle.add("x/data/0", float_bytes(iota_floats(6)));
  expect_load_error(no_pickle.build().bytes, "no '<folder>/data.pkl' record");

  ZipBuilder big_endian = checkpoint_zip("x", pickle, {{"0", float_bytes(iota_floats(6))}});
  big_endian.add("x/byteorder", to_bytes("big"));
  expect_load_error(big_endian.build().bytes, "big-endian");
}

// Every truncation and many byte substitutions of a valid pickle must give a
// graph or an Error, never a crash or an out-of-bounds read (see the sanitizer run).
TEST(TorchCheckpoint, PickleReaderSurvivesTruncationAndCorruption) {
  const Bytes pickle = torch_pickle({simple_tensor(), {"v", "HalfStorage", "1", 4, 1, {3}, {1}}},
                                    Layout::kModelDict, true);
  for (size_t keep = 0; keep < pickle.size(); ++keep) {
    EXPECT_THROW(read_torch_pickle(std::span(pickle.data(), keep), "t"), Error) << keep;
  }
  int refused = 0;
  for (size_t at = 0; at < pickle.size(); ++at) {
    for (uint8_t value : {uint8_t{0x00}, uint8_t{0x01}, uint8_t{0x7f}, uint8_t{0x80}, uint8_t{0xff}, uint8_t{'('},
                          uint8_t{'t'}, uint8_t{'R'}, uint8_t{'h'}, uint8_t{'.'}}) {
      Bytes changed = pickle;
      changed[at] = value;
      try {
        read_torch_pickle(changed, "t");
      } catch (const Error&) {
        ++refused;
      }
    }
  }
  EXPECT_GT(refused, 0);
}

TEST(TorchCheckpointDispatch, ReadsSafetensorsWithKeysAsTheyAre) {
  TempDir dir;
  const std::string path = dir.write("w.safetensors", {});
  Tensor a = Tensor::filled({2, 2}, 1.5f);
  write_safetensors(path, {{"image_encoder.trunk.pos_embed", a}, {"model.no_mem_embed", a}}, {});
  const WeightMap weights = load_checkpoint(path);
  EXPECT_EQ(weights.size(), 2u);
  EXPECT_TRUE(weights.contains("image_encoder.trunk.pos_embed"));
  EXPECT_TRUE(weights.contains("model.no_mem_embed"));
  EXPECT_EQ(weights.at("model.no_mem_embed")[3], 1.5f);
}

TEST(TorchCheckpointDispatch, RefusesEmptyAndUnknownFilesNamingTheAcceptedFormats) {
  TempDir dir;
  const std::string empty = dir.write("empty.pt", {});
  expect_error([&] { load_checkpoint(empty); }, "weights file '" + empty + "' is empty; accepted are PyTorch");
  const std::string text = dir.write("notes.txt", to_bytes("these are not weights, just some text\n"));
  expect_error([&] { load_checkpoint(text); }, "neither a torch.save checkpoint nor a safetensors file");
  expect_error([&] { load_checkpoint(text); }, ".safetensors");
  const std::string legacy =
      dir.write("old.pt", Bytes{0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19, 0x2e});
  expect_error([&] { load_checkpoint(legacy); }, "legacy torch.save format");
  expect_error([&] { load_checkpoint(empty + ".missing"); }, "cannot open");
}

}  // namespace
}  // namespace sam2rt
